"""What the callers of next() and the refill thread share: one Buffer per
kind of number (Snowflake IDs, each segment tag asked for) and the Signals
they wake each other with.

Invariants (an ID is handed out at most once, never after it expired):
- A buffer's `ids` is a collections.deque of (id, expires) pairs. Only the
  refill thread appends (extend); any thread takes with popleft(), which is
  atomic under the GIL, so each pair goes to exactly one taker and callers
  need no lock while IDs are buffered.
- `expires` is a time.monotonic() moment: the start of the call that fetched
  the ID plus max_age; segment numbers never expire (math.inf). A taker that
  pops an expired pair drops it and pops again.
- A caller that finds the buffer empty registers a slot in `waiters` under
  Signals.lock; the next batch is handed out under that lock, the waiting
  callers' slots first (one ID each, oldest waiter first), the rest into
  `ids`. So a batch always serves those who waited for it, however fast
  other threads drain the buffer, and no ID goes to two takers.

Thread-safety: `ids`, `low_mark` and `wake_sent` are read without a lock
(one attribute read each is atomic); `waiters`, `error` and `refused` only
under Signals.lock; the rest belongs to the refill thread.
"""

from __future__ import annotations

import threading
from collections import deque
from itertools import repeat

from .errors import SnowidError


class Waiter:
    """A caller waiting on an empty buffer; `id` is set when a batch hands it
    one. Compares by identity."""

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id: int | None = None


class Buffer:
    __slots__ = (
        "tag",
        "ids",
        "waiters",
        "low_mark",
        "wake_sent",
        "batch",
        "batch_cap",
        "last_refill",
        "refused_until",
        "error",
        "refused",
    )

    def __init__(self, tag: str, first_batch: int, low_water: float) -> None:
        self.tag = tag  # "" for Snowflake IDs
        self.ids: deque[tuple[int, float]] = deque()
        self.waiters: deque[Waiter] = deque()
        # Takers wake the refill thread when fewer than low_mark are left;
        # wake_sent keeps them from doing it again until the next refill.
        self.low_mark = max(1, int(low_water * first_batch))
        self.wake_sent = False
        # Refill thread only: the batch size, its cap (below a node's
        # limit), when the last refill began, no refill before
        # refused_until after a refusal.
        self.batch = first_batch
        self.batch_cap = 1 << 62
        self.last_refill: float | None = None
        self.refused_until = 0.0
        # Under Signals.lock: why the last refill failed, cleared by a
        # success; `refused`: the nodes refuse this request (no use waiting).
        self.error: SnowidError | None = None
        self.refused = False

    def describe(self) -> str:
        return "ID" if not self.tag else f"number of segment tag {self.tag!r}"


class Signals:
    """One lock and two conditions on it: `work` wakes the refill thread,
    `news` wakes callers waiting on an empty buffer (news counts batches put
    and errors recorded)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.news = threading.Condition(self.lock)
        self.news_count = 0
        self.wake = False
        self.stopping = False

    def wake_refill(self) -> None:
        with self.lock:
            self.wake = True
            self.work.notify()

    def tell(self, buffer: Buffer, error: SnowidError, refused: bool) -> None:
        """Records a failed refill of `buffer` and wakes its waiters."""
        with self.lock:
            buffer.error = error
            buffer.refused = refused
            self.news_count += 1
            self.news.notify_all()

    def deliver(self, buffer: Buffer, ids: list[int], expires: float) -> None:
        """Hands a batch out: one ID to each waiting caller, the rest into
        the buffer; clears the buffer's error and wakes its waiters."""
        with self.lock:
            waiters = buffer.waiters
            handed = 0
            while waiters and handed < len(ids):
                waiters.popleft().id = ids[handed]
                handed += 1
            buffer.ids.extend(zip(ids[handed:] if handed else ids, repeat(expires)))
            buffer.error = None
            buffer.refused = False
            self.news_count += 1
            self.news.notify_all()
