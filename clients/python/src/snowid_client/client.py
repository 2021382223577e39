"""snowid_client.Client: IDs for a Python program from one or more snowidd
nodes, served from a local buffer that a daemon thread keeps topped up over
HTTP/1.1 keep-alive connections (GET /v1/ids, GET /v1/segment/{tag}).

next() pops an ID from a collections.deque: no lock, no I/O, one clock read
while IDs are buffered. Only when the buffer is empty does it wait, at most
empty_wait, for the refill thread; it then raises Unavailable (it never
blocks longer). Endpoints that fail are skipped with exponential backoff;
while one answers, callers see no error.

Order: every ID handed out is unique (issued by a node once, popped from the
buffer once), and one buffer hands its IDs out in increasing order. IDs from
several clients, or across a failover, are only roughly time-ordered: a
buffered ID was issued up to max_age ago.

Thread-safety: every method may be called from any number of threads at
once. close() stops the refill thread and ends its call in flight.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Sequence

from .decode import DecodedId, Layout, decode
from .errors import InvalidArgument, SnowidError, Unavailable
from .node import Node, NodeFailure, Refused
from .options import Options, make_options
from .refill import Refiller
from .state import Buffer, Signals, Waiter

_monotonic = time.monotonic


@dataclass(frozen=True)
class Stats:
    """What a client did since it was made."""

    calls: int  # HTTP calls that brought IDs
    # 200 answers discarded as no node could have sent them (docs/clients.md,
    # "What a client accepts"); each also backed its endpoint off.
    invalid_answers: int


class Client:
    """A buffered client of snowidd nodes.

    Client(endpoints, *, bearer_token="", agent="", call_deadline=0.5,
           empty_wait=0.2, low_water=0.5, initial_batch=1000,
           max_batch=10000, refill_period=0.5, max_age=10.0,
           backoff_initial=0.1, backoff_max=5.0)

    endpoints: base URLs of snowidd's HTTP listener ("http://10.0.0.1:8080"),
    tried in order. Durations are seconds (int or float). Raises
    InvalidArgument naming the first bad option. Connects lazily: an endpoint
    down now is not an error here.
    """

    def __init__(self, endpoints: Sequence[str], **options: object) -> None:
        self.options: Options = make_options(endpoints, **options)
        headers = {"Accept": "application/json"}
        if self.options.bearer_token:
            headers["Authorization"] = f"Bearer {self.options.bearer_token}"
        if self.options.agent:
            headers["X-Snowid-Agent"] = self.options.agent
        self._headers = headers
        self._signals = Signals()
        self._snowflake = Buffer("", self.options.initial_batch, self.options.low_water)
        self._tags: dict[str, Buffer] = {}
        self._layout: Layout | None = None
        self._layout_lock = threading.Lock()
        nodes = [Node(e, headers, self.options.call_deadline) for e in self.options.endpoints]
        self._refiller = Refiller(
            self.options, nodes, self._all_buffers, self._signals, self._set_layout
        )
        self._refiller.start()

    # The hot path -----------------------------------------------------------

    def next(self) -> int:
        """One Snowflake ID. Unavailable when the buffer stayed empty for
        empty_wait; InvalidArgument when the nodes refuse this client."""
        return self._take(self._snowflake)

    def next_many(self, count: int) -> list[int]:
        """`count` Snowflake IDs, each as next() would return it. On error
        the IDs already taken are consumed."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidArgument(f"count: {count!r} is not a non-negative integer")
        next_id = self.next
        return [next_id() for _ in range(count)]

    def next_tag(self, tag: str) -> int:
        """The next number of segment-mode tag `tag`, from a buffer of its own
        (percent-encoded in the path; the nodes judge the name). NotFound if
        the nodes do not know the tag."""
        buffer = self._tags.get(tag)
        if buffer is None:
            buffer = self._tag_buffer(tag)
        return self._take(buffer)

    # Decoding ---------------------------------------------------------------

    def layout(self) -> Layout:
        """The nodes' layout, from the first endpoint's /v1/info that
        answers (read once, then cached)."""
        layout = self._layout
        if layout is not None:
            return layout
        with self._layout_lock:
            if self._layout is None:
                self._layout = self._fetch_layout()
            return self._layout

    def decode(self, id: int) -> DecodedId:
        """timestamp (ms and datetime), datacenter, worker and sequence of
        `id` under the nodes' layout."""
        return decode(self.layout(), id)

    # Lifetime ---------------------------------------------------------------

    def close(self) -> None:
        """Stops the refill thread (ending its call in flight). Later calls
        of next() raise Unavailable."""
        self._refiller.stop(self.options.call_deadline + 1.0)
        for buffer in self._all_buffers():
            buffer.ids.clear()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def stats(self) -> Stats:
        """The client's counters so far."""
        refiller = self._refiller
        return Stats(calls=refiller.calls, invalid_answers=refiller.invalid_answers)

    @property
    def round_trips(self) -> int:
        """HTTP calls that brought IDs so far: stats().calls, kept for the
        callers of earlier versions."""
        return self._refiller.calls

    # Taking and waiting ----------------------------------------------------

    def _take(self, buffer: Buffer) -> int:
        """The hot path: pops until an ID has not expired (expired IDs are
        dropped, never handed out); waits only once the buffer is empty. No
        lock and no I/O while IDs are buffered."""
        popleft = buffer.ids.popleft
        while True:
            try:
                id_, expires = popleft()
            except IndexError:
                return self._wait_and_take(buffer)
            if not buffer.wake_sent and len(buffer.ids) < buffer.low_mark:
                self._wake(buffer)
            if expires > _monotonic():
                return id_

    def _wake(self, buffer: Buffer) -> None:
        buffer.wake_sent = True
        self._signals.wake_refill()

    def _wait_and_take(self, buffer: Buffer) -> int:
        """Waits, at most empty_wait, for an ID: registers as a waiter (the
        next batch hands it one, state.py) and wakes the refill thread."""
        signals = self._signals
        deadline = _monotonic() + self.options.empty_wait
        waiter = Waiter()
        with signals.lock:
            buffer.waiters.append(waiter)
            try:
                while waiter.id is None:
                    id_ = self._pop_fresh(buffer)
                    if id_ is not None:
                        return id_
                    if signals.stopping:
                        raise Unavailable("the client is closed")
                    if buffer.refused and buffer.error is not None:
                        raise buffer.error.fresh()
                    signals.wake = True
                    signals.work.notify()
                    left = deadline - _monotonic()
                    if left <= 0:
                        raise self._empty_error(buffer)
                    signals.news.wait(left)
                return waiter.id
            finally:
                if waiter.id is None:
                    buffer.waiters.remove(waiter)

    @staticmethod
    def _pop_fresh(buffer: Buffer) -> int | None:
        """The first unexpired ID popped, or None; the caller holds the lock
        and wakes the refill thread itself."""
        now = _monotonic()
        while buffer.ids:
            try:
                id_, expires = buffer.ids.popleft()
            except IndexError:
                return None
            if expires > now:
                return id_
        return None

    def _empty_error(self, buffer: Buffer) -> SnowidError:
        if buffer.error is not None:
            return buffer.error.fresh()
        wait_ms = round(self.options.empty_wait * 1000)
        return Unavailable(f"no {buffer.describe()} buffered and none fetched within {wait_ms} ms")

    def _tag_buffer(self, tag: str) -> Buffer:
        if not isinstance(tag, str) or not tag or len(tag) > 128 or not tag.isprintable():
            raise InvalidArgument(
                f"tag: {tag!r} is not a segment tag (1 to 128 printable characters)"
            )
        with self._signals.lock:
            buffer = self._tags.get(tag)
            if buffer is None:
                buffer = Buffer(tag, self.options.initial_batch, self.options.low_water)
                self._tags[tag] = buffer
            return buffer

    def _all_buffers(self) -> list[Buffer]:
        with self._signals.lock:
            return [self._snowflake, *self._tags.values()]

    def _set_layout(self, layout: Layout) -> None:
        if self._layout is None:
            self._layout = layout

    def _fetch_layout(self) -> Layout:
        """/v1/info from each endpoint in turn, on this thread's own
        connection; the first layout read wins."""
        failures = []
        for endpoint in self.options.endpoints:
            node = Node(endpoint, self._headers, self.options.call_deadline)
            try:
                return Layout.from_info(node.info())
            except Refused as refusal:
                raise refusal.error.fresh() from None
            except (NodeFailure, ValueError) as failure:
                failures.append(str(failure))
            finally:
                node.close()
        raise Unavailable("no endpoint answered /v1/info: " + "; ".join(failures))
