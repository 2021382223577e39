"""One snowidd endpoint as the refill thread sees it: a keep-alive HTTP/1.1
connection, the calls the client makes (/v1/ids, /v1/segment/{tag},
/v1/info) with a deadline, what a failure means, and the endpoint's backoff.

A call either returns a parsed answer or raises:
- NodeFailure: the node is down, slow or cannot issue now (connection error,
  timeout, 5xx, an answer that is not snowidd's): back off, ask the next one.
- Refused: the node refuses this request (400, 401, 403, 404); `too_large`
  when the count is above the node's max_batch (ask for less).

Deadline: every socket operation of a call gets the time left of the call's
deadline, and a call that ends past it counts as failed. A connection the
server closed while idle is reopened once, at no cost to the endpoint.

Thread-safety: one thread (the client's refill thread, or the caller that
made a temporary Node) uses a Node; abort() may be called from any thread.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any
from urllib.parse import quote

from .errors import InvalidArgument, NotFound, SnowidError
from .options import split_endpoint


class NodeFailure(Exception):
    """The node could not answer (the message says why)."""


class Refused(Exception):
    """The node refused the request; `error` is what callers get."""

    def __init__(self, error: SnowidError, too_large: bool = False) -> None:
        super().__init__(str(error))
        self.error = error
        self.too_large = too_large


def _error_text(body: bytes) -> str:
    try:
        message = json.loads(body).get("error")
        if isinstance(message, str):
            return message
    except (ValueError, AttributeError):
        pass
    return body[:200].decode("utf-8", "replace").strip()


class Node:
    def __init__(self, endpoint: str, headers: dict[str, str], deadline: float) -> None:
        self.endpoint = endpoint
        self._host, self._port = split_endpoint(endpoint)
        self._headers = headers
        self._deadline = deadline
        self._connection: http.client.HTTPConnection | None = None
        # The refill thread's: when to ask again, the current backoff, and
        # the node's own batch limit (from /v1/info, once).
        self.retry_at = 0.0
        self.backoff = 0.0
        self.max_batch: int | None = None

    def ids(self, tag: str, count: int) -> list[int]:
        """`count` Snowflake IDs (tag empty) or numbers of segment tag `tag`."""
        path = (
            f"/v1/ids?count={count}"
            if not tag
            else f"/v1/segment/{quote(tag, safe='')}?count={count}"
        )
        answer = self._get_json(path, count)
        ids = answer.get("ids")
        if not isinstance(ids, list) or len(ids) != count:
            raise NodeFailure(f"{self.endpoint}{path}: the answer holds no {count} IDs")
        try:
            return [int(text) for text in ids]
        except (TypeError, ValueError):
            raise NodeFailure(f"{self.endpoint}{path}: an ID is not a decimal string") from None

    def info(self) -> dict[str, Any]:
        """GET /v1/info."""
        return self._get_json("/v1/info", 0)

    def abort(self) -> None:
        """Ends a call in flight from another thread (its socket is shut)."""
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _get_json(self, path: str, count: int) -> dict[str, Any]:
        status, body = self._get(path)
        if status == 200:
            try:
                answer = json.loads(body)
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                raise NodeFailure(f"{self.endpoint}{path}: the answer is not a JSON object")
            return answer
        message = f"{self.endpoint}{path}: HTTP {status}: {_error_text(body)}"
        if status == 404:
            raise Refused(NotFound(message, status))
        if status in (400, 401, 403):
            text = _error_text(body)
            too_large = status == 400 and count > 1 and text.startswith("count ")
            raise Refused(InvalidArgument(message, status), too_large)
        raise NodeFailure(message)

    def _get(self, path: str) -> tuple[int, bytes]:
        start = time.monotonic()
        for attempt in (0, 1):
            reused = self._connection is not None and self._connection.sock is not None
            try:
                return self._exchange(path, start)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self.close()
                elapsed = time.monotonic() - start
                if not (reused and attempt == 0 and elapsed < self._deadline):
                    raise NodeFailure(f"{self.endpoint}{path}: {e!r}") from None
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise NodeFailure(f"{self.endpoint}{path}: {e!r}") from None
        raise AssertionError("unreachable")

    def _left(self, start: float) -> float:
        left = self._deadline - (time.monotonic() - start)
        if left <= 0:
            raise socket.timeout(f"call deadline {self._deadline} s passed")
        return left

    def _exchange(self, path: str, start: float) -> tuple[int, bytes]:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self._host, self._port)
        connection = self._connection
        if connection.sock is None:
            connection.timeout = self._left(start)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.sock.settimeout(self._left(start))
        connection.request("GET", path, headers=self._headers)
        response = connection.getresponse()
        if connection.sock is not None:
            connection.sock.settimeout(self._left(start))
        body = response.read()
        self._left(start)
        return response.status, body
