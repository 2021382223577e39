"""Calls made on the caller's own thread, unbuffered: business IDs
(GET /v1/business/{tag}?count=N), strings a node formats from a tag's
numbers, asked for as a batch per call.

Each call goes where a refill would (refill.py): to an endpoint drawn at
random among the healthy ones, then to the others in turn while they fail
(no connection, the call deadline, a 5xx such as 503 from a node whose
store is down or whose clock disagrees with the store's about the period,
an answer that breaks answer.py's rule); each failure backs its endpoint
off for the refills too, and is counted in the stats. When no endpoint is
healthy, the one whose backoff ends first is asked, so that a call never
fails without asking a node. A refusal (400, 401, 403, 404, 409) is the
request's: it is raised at once, not asked of the next endpoint. When every
endpoint tried failed, Unavailable names each one's failure.

A call uses a connection of its own (a Node of the endpoint, kept idle for
the next call afterwards), never the refill thread's.

Thread-safety: any number of threads may call at once; _lock guards the
idle connections.
"""

from __future__ import annotations

import threading
import time

from .errors import InvalidArgument, Unavailable
from .node import Node, NodeFailure, Refused
from .options import Options, check_tag
from .refill import Refiller

# Idle connections kept per endpoint for the next direct calls.
_IDLE_KEPT = 4


class DirectCaller:
    def __init__(self, options: Options, headers: dict[str, str], refiller: Refiller) -> None:
        self._options = options
        self._headers = headers
        self._refiller = refiller
        self._lock = threading.Lock()
        self._idle: dict[int, list[Node]] = {}
        self._closed = False

    def business(self, tag: str, count: int) -> list[str]:
        """`count` business IDs of `tag` (module docstring)."""
        check_tag(tag)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise InvalidArgument(f"count: {count!r} is not a positive integer")
        refiller = self._refiller
        tried: set[int] = set()
        failures: list[str] = []
        while True:
            if self._closed:
                raise Unavailable("the client is closed")
            started = time.monotonic()
            index = refiller.draw(tried, started)
            if index is None:
                if tried:
                    raise Unavailable(f"no endpoint gave {count} business IDs of tag {tag!r}: "
                                      + "; ".join(failures))
                index = refiller.soonest()
            tried.add(index)
            node = self._borrow(index)
            refiller.count(None)
            try:
                ids = node.business(tag, count)
            except NodeFailure as failure:
                node.close()
                refiller.count(failure)
                refiller.back_off(index, started)
                failures.append(str(failure))
                continue
            except Refused as refusal:
                self._give_back(index, node)
                raise refusal.error.fresh() from None
            refiller.back_off(index, None)
            self._give_back(index, node)
            return ids

    def _borrow(self, index: int) -> Node:
        with self._lock:
            idle = self._idle.get(index)
            if idle:
                return idle.pop()
        endpoint = self._options.endpoints[index]
        return Node(endpoint, self._headers, self._options.call_deadline)

    def _give_back(self, index: int, node: Node) -> None:
        with self._lock:
            idle = self._idle.setdefault(index, [])
            if not self._closed and len(idle) < _IDLE_KEPT:
                idle.append(node)
                return
        node.close()

    def forget_after_fork(self) -> None:
        """In a forked child: the idle connections are the parent's."""
        self._lock = threading.Lock()
        idle, self._idle = self._idle, {}
        for nodes in idle.values():
            for node in nodes:
                node.forget_connection()

    def close(self) -> None:
        """Closes the idle connections; later calls raise Unavailable."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for nodes in idle.values():
            for node in nodes:
                node.close()
