"""What the callers of next() and the refill thread share: one Buffer per
kind of number (Snowflake IDs, each segment tag asked for) and the Signals
they wake each other with, which also keep the ID counters of Stats.

A buffer is a FIFO of Chunks. A Chunk is a collections.deque of the IDs of
one batch (a batch is cut into chunks of at most `chunk_size`) and the
moment they expire. Invariants (an ID is handed out at most once, never
after it expired):
- Callers pop from `head` with popleft(), atomic under the GIL, with no
  lock: each ID goes to exactly one taker. Only the refill thread makes
  chunks; a chunk is filled before anyone can see it.
- `expires` is a time.monotonic() moment: the start of the call that fetched
  the chunk's IDs plus max_age; segment numbers never expire (math.inf). A
  taker checks it after its pop; one that popped an expired ID drops it and
  the rest of its chunk, counting them.
- When `head` runs out, a taker moves it to the next chunk of `queue`
  under Signals.lock (take_locked). That is the only moment the low-water
  mark is checked (at most one chunk late) and, while a refill is wanted,
  the moment the taker gives up the GIL for a moment (see client.py).
- A caller that finds the buffer empty registers a Waiter in `waiters`
  under the lock; the next batch is handed out under that lock, the
  waiting callers first (one ID each, oldest first), the rest chunked into
  `queue`. So a batch always serves those who waited for it, however fast
  other threads drain the buffer.

Thread-safety: `head` (one attribute read), `wake_sent` and `received_any`
are read without a lock; `queue`, `queued`, `waiters`, `error`, `refused`
and the counters only under Signals.lock; `batch`, `batch_cap`,
`last_refill` and `refused_until` belong to the refill thread.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from typing import Callable, Iterable

from .errors import SnowidError

# The most IDs in one chunk: a taker moves to the next chunk, under the
# lock, once per this many IDs at most.
MAX_CHUNK = 1024


class Chunk(deque):
    """IDs of one batch (or a part of one), in order, and when they expire."""

    __slots__ = ("expires",)

    def __init__(self, ids: Iterable[int] = (), expires: float = math.inf) -> None:
        super().__init__(ids)
        self.expires = expires


class Waiter:
    """A caller waiting on an empty buffer; `id` is set when a batch hands it
    one. `wake` (async callers) is called after each news. Compares by
    identity."""

    __slots__ = ("id", "wake")

    def __init__(self, wake: Callable[[], None] | None = None) -> None:
        self.id: int | None = None
        self.wake = wake


class Buffer:
    __slots__ = (
        "tag",
        "head",
        "queue",
        "queued",
        "waiters",
        "low_mark",
        "chunk_size",
        "wake_sent",
        "received_any",
        "batch",
        "batch_cap",
        "last_refill",
        "refused_until",
        "error",
        "refused",
    )

    def __init__(self, tag: str, first_batch: int, low_water: float) -> None:
        self.tag = tag  # "" for Snowflake IDs
        self.head = Chunk()
        self.queue: deque[Chunk] = deque()
        self.queued = 0  # IDs in queue
        self.waiters: deque[Waiter] = deque()
        self.set_batch(first_batch, low_water)
        # Set by a taker that woke the refill thread; cleared by the next
        # batch. While set, takers yield the GIL at chunk ends.
        self.wake_sent = False
        self.received_any = False  # a batch has arrived (start_wait is over)
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

    def set_batch(self, batch: int, low_water: float) -> None:
        """The low-water mark and chunk size for batches of `batch`."""
        self.low_mark = max(1, int(low_water * batch))
        self.chunk_size = max(1, min(MAX_CHUNK, self.low_mark // 2))

    def left(self) -> int:
        """IDs buffered (a moment's view without the lock)."""
        return len(self.head) + self.queued

    def describe(self) -> str:
        return "ID" if not self.tag else f"number of segment tag {self.tag!r}"


def _drain(chunk: Chunk) -> int:
    """Empties `chunk` and returns how many IDs this took from it (takers
    may pop from it meanwhile)."""
    taken = 0
    popleft = chunk.popleft
    try:
        while True:
            popleft()
            taken += 1
    except IndexError:
        return taken


class Signals:
    """One lock and two conditions on it: `work` wakes the refill thread,
    `news` wakes callers waiting on an empty buffer. The ID counters of
    Stats (under the lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.news = threading.Condition(self.lock)
        self.wake = False
        self.stopping = False
        self.ids_received = 0
        self.ids_expired = 0
        self.ids_discarded = 0  # buffered when the client closed

    # Takers (any thread) ---------------------------------------------------

    def take_locked(self, buffer: Buffer) -> int | None:
        """Under the lock: the next unexpired ID, moving the head on to the
        next chunk as it runs out (and waking the refill thread below the
        low-water mark); None when the buffer is empty."""
        while True:
            head = buffer.head
            try:
                id_ = head.popleft()
            except IndexError:
                if not buffer.queue:
                    return None
                buffer.head = head = buffer.queue.popleft()
                buffer.queued -= len(head)
                if not buffer.wake_sent and len(head) + buffer.queued < buffer.low_mark:
                    self.wake_locked(buffer)
                continue
            if head.expires > time.monotonic():
                return id_
            self.ids_expired += 1 + _drain(head)

    def wake_locked(self, buffer: Buffer) -> None:
        """Under the lock: asks the refill thread to look at the buffers."""
        buffer.wake_sent = True
        self.wake = True
        self.work.notify()

    def expired(self, head: Chunk) -> None:
        """A taker popped an expired ID off `head`: drops it and the rest."""
        with self.lock:
            self.ids_expired += 1 + _drain(head)

    # The refill thread -----------------------------------------------------

    def tell(self, buffer: Buffer, error: SnowidError, refused: bool) -> None:
        """Records a failed refill of `buffer` and wakes its waiters."""
        with self.lock:
            buffer.error = error
            buffer.refused = refused
            self.news.notify_all()
            wakes = [w.wake for w in buffer.waiters if w.wake is not None]
        for wake in wakes:
            wake()

    def deliver(self, buffer: Buffer, ids: list[int], expires: float) -> None:
        """Hands a batch out: one ID to each waiting caller, the rest into
        the buffer in chunks; clears the buffer's error and wakes waiters."""
        with self.lock:
            waiters = buffer.waiters
            wakes = [w.wake for w in waiters if w.wake is not None]
            handed = 0
            while waiters and handed < len(ids):
                waiters.popleft().id = ids[handed]
                handed += 1
            size = buffer.chunk_size
            for start in range(handed, len(ids), size):
                chunk = Chunk(ids[start : start + size], expires)
                buffer.queue.append(chunk)
                buffer.queued += len(chunk)
            self.ids_received += len(ids)
            buffer.received_any = True
            buffer.wake_sent = False
            buffer.error = None
            buffer.refused = False
            self.news.notify_all()
        for wake in wakes:
            wake()

    def drop_expired(self, buffer: Buffer, now: float) -> float:
        """Drops the chunks that expired by `now`; returns when the oldest
        left expires (math.inf if none)."""
        with self.lock:
            if buffer.head.expires <= now:
                self.ids_expired += _drain(buffer.head)
            queue = buffer.queue
            while queue and queue[0].expires <= now:
                chunk = queue.popleft()
                buffer.queued -= len(chunk)
                self.ids_expired += len(chunk)
            if len(buffer.head):
                return buffer.head.expires
            return queue[0].expires if queue else math.inf

    def discard(self, buffer: Buffer) -> None:
        """Empties the buffer (the client closed); counts what it held."""
        with self.lock:
            self.ids_discarded += _drain(buffer.head) + buffer.queued
            buffer.queue.clear()
            buffer.queued = 0

    def forget_after_fork(self, buffers: list[Buffer]) -> None:
        """In a child process made by os.fork(), before any other thread
        runs: a fresh lock (another thread may have held it at the fork)
        and empty buffers. What the buffers held is the parent's to hand
        out: handed out here too, each would be issued twice. Counted as
        discarded."""
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.news = threading.Condition(self.lock)
        self.wake = False
        for buffer in buffers:
            self.ids_discarded += len(buffer.head) + buffer.queued
            buffer.head = Chunk()
            buffer.queue.clear()
            buffer.queued = 0
            buffer.waiters.clear()  # the threads that waited are the parent's
            buffer.wake_sent = False
            buffer.received_any = False  # the child's first refill opens a connection
            buffer.last_refill = None
            buffer.error = None
            buffer.refused = False

    def stop(self, buffers: list[Buffer]) -> None:
        """Tells everyone the client is closing."""
        with self.lock:
            self.stopping = True
            self.work.notify_all()
            self.news.notify_all()
            wakes = [w.wake for b in buffers for w in b.waiters if w.wake is not None]
        for wake in wakes:
            wake()
