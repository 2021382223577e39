"""snowid_client.Client: IDs for a Python program from one or more snowidd
nodes, served from a local buffer that a daemon thread keeps topped up over
HTTP/1.1 keep-alive connections (GET /v1/ids, GET /v1/segment/{tag}, in
binary), each refill from a healthy endpoint drawn at random. Business IDs
(next_business) are not buffered: each call asks a node on the caller's
thread.

next() pops an ID from a collections.deque: no lock, no I/O, one clock read
while IDs are buffered. Only when the buffer is empty does it wait, at most
empty_wait (start_wait until the first batch has arrived), for the refill
thread; it then raises Unavailable (it never blocks longer). Endpoints that
fail are skipped with exponential backoff and jitter; while one answers,
callers see no error.

Order: every ID handed out is unique (issued by a node once, popped from the
buffer once), and one buffer hands each node's IDs out in increasing order.
IDs from several clients, or from several nodes, are only roughly
time-ordered: a buffered ID was issued up to max_age ago.

Thread-safety: every method may be called from any number of threads at
once. close() stops the refill thread and ends its call in flight.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Sequence

from .core import Core, Stats
from .decode import DecodedId, Layout, decode
from .errors import InvalidArgument
from .options import Options

_monotonic = time.monotonic


class Client:
    """A buffered client of snowidd nodes.

    Client(endpoints, *, bearer_token="", agent="", call_deadline=0.5,
           empty_wait=0.2, start_wait=2.0, low_water=0.5,
           initial_batch=1000, max_batch=10000, refill_period=0.5,
           max_age=10.0, backoff_initial=0.1, backoff_max=5.0)

    endpoints: base URLs of snowidd's HTTP listener ("http://10.0.0.1:8080").
    Durations are seconds (int or float). Raises InvalidArgument naming the
    first bad option. Starts its refill thread, which asks for the first
    batch at once; an endpoint down now is not an error here.
    """

    def __init__(self, endpoints: Sequence[str], **options: object) -> None:
        self._core = Core(endpoints, options)
        self._snowflake = self._core.snowflake
        self.options: Options = self._core.options

    def next(self) -> int:
        """One Snowflake ID. Unavailable when the buffer stayed empty for
        empty_wait; InvalidArgument when the nodes refuse this client."""
        # The hot path (Core.take, inlined): a pop and a clock read.
        head = self._snowflake.head
        try:
            id_ = head.popleft()
        except IndexError:
            return self._core.take_slow(self._snowflake)
        if head.expires > _monotonic():
            return id_
        self._core.signals.expired(head)
        return self._core.take_slow(self._snowflake)

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
        return self._core.take(self._core.tag_buffer(tag))

    def next_business(self, tag: str, count: int = 1) -> list[str]:
        """`count` business IDs of tag `tag` (its numbers formatted by its
        template, e.g. "ORD-20261202-000001"), from one node in one call on
        this thread, unbuffered; the endpoint is drawn and failed over as a
        refill's is, within call_deadline per endpoint. NotFound if the tag
        is unknown or has no template; FailedPrecondition if it is retired
        or its period's numbers outgrew the template; InvalidArgument for a
        refused token; Unavailable naming each endpoint's failure (a 503, an
        invalid answer) when none answered."""
        return self._core.direct.business(tag, count)

    def layout(self) -> Layout:
        """The nodes' layout, from the first endpoint's /v1/info that
        answers (read once, then cached)."""
        return self._core.layout()

    def decode(self, id: int) -> DecodedId:
        """timestamp (ms and datetime), datacenter, worker and sequence of
        `id` under the nodes' layout."""
        return decode(self._core.layout(), id)

    def stats(self) -> Stats:
        """The client's counters so far (docs/clients.md, "Stats")."""
        return self._core.stats()

    @property
    def round_trips(self) -> int:
        """Requests for IDs so far: stats().calls, kept for the callers of
        earlier versions."""
        return self._core.refiller.calls

    def close(self) -> None:
        """Stops the refill thread (ending its call in flight). Later calls
        of next() raise Unavailable."""
        self._core.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
