"""One snowidd endpoint as the refill thread sees it: a keep-alive HTTP/1.1
connection, the calls the client makes (/v1/ids, /v1/segment/{tag},
/v1/business/{tag}, /v1/info) with a deadline, what a failure means, and the endpoint's backoff.

Batches are asked for in binary (format=binary: 8 bytes a number). A node
from before format=binary answers 400 naming the format; that endpoint is
then asked in JSON from then on (the same call, at once, at no cost to it).

A call either returns a parsed answer or raises:
- NodeFailure: the node is down, slow or cannot issue now (connection error,
  timeout, 5xx): back off, ask the next one.
- InvalidAnswer, a NodeFailure: a 200 answer that breaks the rule of
  answer.py (a body that is not a batch a node could have issued, of
  another Content-Type than asked for, above what the count asked for can
  take, or not whole within the deadline): the batch is discarded,
  counted, and the node backed off as above.
- Refused: the node refuses this request (400, 401, 403, 404, and 409 for a
  business call: the tag is retired or its template too narrow); `too_large`
  when the count is above the node's max_batch (ask for less).

Deadline: a call (connect, request, headers and the whole body) ends by
call_deadline after it began: every send and receive on the socket waits
only for the time left (_DeadlineSocket), so a node that trickles its
answer cannot hold the call longer. A body is read up to its limit and no
further. A connection the server closed while idle is reopened once, at no
cost to the endpoint.

Thread-safety: one thread (the client's refill thread, or the caller that
made a temporary Node) uses a Node; abort() may be called from any thread.
"""

from __future__ import annotations

import http.client
import json
import math
import socket
import time
from typing import Any
from urllib.parse import quote

from .answer import Watermarks, body_limit, business_body_limit, parse_batch, parse_binary
from .answer import parse_business
from .errors import FailedPrecondition, InvalidArgument, NotFound, SnowidError
from .options import split_endpoint

# The most bytes read of a /v1/info answer, and of a refusal's text.
_INFO_LIMIT = 64 * 1024
_REFUSAL_LIMIT = 4096
_BINARY_TYPE = "application/octet-stream"
_JSON_TYPE = "application/json"
# Whether a new Node asks for binary batches first (the tests turn it off
# to hold the JSON answers to their rule too).
ASK_BINARY = True


class NodeFailure(Exception):
    """The node could not answer (the message says why)."""


class InvalidAnswer(NodeFailure):
    """The node answered 200 with what it could not have issued."""


class _BinaryRefused(Exception):
    """A node from before format=binary refused it (400 naming the format)."""


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
    except (ValueError, AttributeError, RecursionError):
        pass
    return body[:200].decode("utf-8", "replace").strip()


class _DeadlineSocket(socket.socket):
    """A socket whose every send and receive ends by `deadline`, a
    time.monotonic() moment the call sets: http.client reads headers and
    body in many receives, each of which would otherwise wait afresh."""

    deadline = math.inf

    def _wait_at_most_the_time_left(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the call deadline passed")
        self.settimeout(left)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._wait_at_most_the_time_left()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._wait_at_most_the_time_left()
        super().sendall(data, flags)


def _connect(address: tuple[str, int], timeout: float, source: Any = None) -> socket.socket:
    """http.client's socket factory, making _DeadlineSockets. A name with
    several addresses is tried one address after another within `timeout`
    all together (socket.create_connection gives each address all of it:
    two that drop the connection would take twice the call deadline)."""
    deadline = time.monotonic() + timeout
    host, port = address
    failure: OSError = socket.timeout(f"no connection to {host}:{port} within {timeout:.3f} s")
    for family, kind, protocol, _, where in socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        sock = _DeadlineSocket(family, kind, protocol)
        try:
            sock.settimeout(left)
            if source:
                sock.bind(source)
            sock.connect(where)
            return sock
        except OSError as e:
            sock.close()
            failure = e
    raise failure


class Node:
    def __init__(self, endpoint: str, headers: dict[str, str], deadline: float) -> None:
        self.endpoint = endpoint
        self._host, self._port = split_endpoint(endpoint)
        self._headers = headers
        self._deadline = deadline
        self._connection: http.client.HTTPConnection | None = None
        self._watermarks = Watermarks()
        # The refill thread's: when to ask again, the current backoff, and
        # the node's own batch limit (from /v1/info, once).
        self.retry_at = 0.0
        self.backoff = 0.0
        self.max_batch: int | None = None
        # False once the node refused format=binary (a node from before it).
        self.binary = ASK_BINARY

    def ids(self, tag: str, count: int) -> list[int]:
        """1 to `count` Snowflake IDs (tag empty) or numbers of segment tag
        `tag`, as answer.py takes them."""
        path = (
            f"/v1/ids?count={count}"
            if not tag
            else f"/v1/segment/{quote(tag, safe='')}?count={count}"
        )
        if self.binary:
            try:
                return self._batch(tag, path + "&format=binary", count, True)
            except _BinaryRefused:
                self.binary = False
        return self._batch(tag, path, count, False)

    def _batch(self, tag: str, path: str, count: int, binary: bool) -> list[int]:
        body, issuer = self._answer(path, body_limit(count, binary), count, binary)
        try:
            ids = parse_binary(body, count) if binary else parse_batch(body, count)
            self._watermarks.check(tag, issuer, ids)
        except ValueError as e:
            raise InvalidAnswer(f"{self.endpoint}{path}: {e}") from None
        self._watermarks.record(tag, issuer, ids)
        return ids

    def business(self, tag: str, count: int) -> list[str]:
        """`count` business IDs of tag `tag`, as answer.py takes them (JSON
        only: a 200 of another Content-Type is an InvalidAnswer)."""
        path = f"/v1/business/{quote(tag, safe='')}?count={count}"
        body, _ = self._answer(path, business_body_limit(count, tag), count, _JSON_TYPE)
        try:
            return parse_business(body, tag, count)
        except ValueError as e:
            raise InvalidAnswer(f"{self.endpoint}{path}: {e}") from None

    def info(self) -> dict[str, Any]:
        """GET /v1/info, a JSON object."""
        body, _ = self._answer("/v1/info", _INFO_LIMIT, 0)
        try:
            answer = json.loads(body)
        except (ValueError, RecursionError):
            answer = None
        if not isinstance(answer, dict):
            raise InvalidAnswer(f"{self.endpoint}/v1/info: the answer is not a JSON object")
        return answer

    def abort(self) -> None:
        """Ends a call in flight from another thread (its socket is shut)."""
        connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def forget_connection(self) -> None:
        """Drops the connection without a word on it: in a forked child,
        whose parent may still use it (close() of the socket ends only
        this process's descriptor)."""
        connection, self._connection = self._connection, None
        if connection is not None and connection.sock is not None:
            connection.sock.close()

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _answer(
        self, path: str, limit: int, count: int, kind: str | bool = False
    ) -> tuple[bytes, str | None]:
        """The body and Snowid-Issuer of a 200 answer; raises for another.
        `kind`: True for a binary batch, or the Content-Type a 200 must have
        (False: any)."""
        binary = kind is True
        status, body, issuer = self._get(path, limit, kind)
        if status == 200:
            return body, issuer
        text = _error_text(body)
        message = f"{self.endpoint}{path}: HTTP {status}: {text}"
        if status == 404:
            raise Refused(NotFound(message, status))
        if status == 409 and path.startswith("/v1/business/"):
            raise Refused(FailedPrecondition(message, status))
        if binary and status == 400 and "format" in text and "binary" in text:
            raise _BinaryRefused(message)
        if status in (400, 401, 403):
            too_large = status == 400 and count > 1 and text.startswith("count ")
            raise Refused(InvalidArgument(message, status), too_large)
        raise NodeFailure(message)

    def _get(self, path: str, limit: int, kind: str | bool) -> tuple[int, bytes, str | None]:
        start = time.monotonic()
        deadline = start + self._deadline
        for attempt in (0, 1):
            reused = self._connection is not None and self._connection.sock is not None
            try:
                return self._exchange(path, limit, deadline, kind)
            except NodeFailure:
                self.close()
                raise
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                self.close()
                if not (reused and attempt == 0 and time.monotonic() < deadline):
                    raise NodeFailure(f"{self.endpoint}{path}: {e!r}") from None
            except (OSError, http.client.HTTPException) as e:
                self.close()
                raise NodeFailure(f"{self.endpoint}{path}: {e!r}") from None
        raise AssertionError("unreachable")

    def _exchange(
        self, path: str, limit: int, deadline: float, kind: str | bool
    ) -> tuple[int, bytes, str | None]:
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self._host, self._port)
            self._connection._create_connection = _connect  # type: ignore[attr-defined]
        connection = self._connection
        if connection.sock is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout(f"call deadline {self._deadline} s passed")
            connection.timeout = left
            connection.connect()
        connection.sock.deadline = deadline
        connection.request("GET", path, headers=self._headers)
        response = connection.getresponse()
        expected = _BINARY_TYPE if kind is True else kind
        if expected and response.status == 200:
            got = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if got != expected:  # a proxy that dropped the parameter, a page
                raise InvalidAnswer(
                    f"{self.endpoint}{path}: Content-Type {got or 'none'!r}, not {expected}"
                )
        body = self._read(response, limit, f"{self.endpoint}{path}")
        return response.status, body, response.getheader("Snowid-Issuer")

    def _read(self, response: http.client.HTTPResponse, limit: int, where: str) -> bytes:
        """The body, read no further than `limit` bytes. A 200 answer longer
        than that, or not whole by the deadline, is an InvalidAnswer; of a
        refusal the first `_REFUSAL_LIMIT` bytes are enough."""
        taken = response.status == 200
        if not taken:
            limit = min(limit, _REFUSAL_LIMIT)
        declared = response.length
        if taken and declared is not None and declared > limit:
            raise InvalidAnswer(f"{where}: a body of {declared} bytes, above {limit}")
        try:
            body = response.read(limit + 1)
        except socket.timeout:
            if taken:
                raise InvalidAnswer(
                    f"{where}: the body was not whole within {self._deadline} s"
                ) from None
            raise
        if len(body) > limit:
            if taken:
                raise InvalidAnswer(f"{where}: a body above {limit} bytes")
            self.close()  # the rest of a long refusal is left unread
            return body[:limit]
        if response.length:  # the connection ended before Content-Length
            raise http.client.IncompleteRead(body, response.length)
        return body
