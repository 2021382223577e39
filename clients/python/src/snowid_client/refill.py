"""The refill thread: keeps every Buffer above its low-water mark with
batches from the first healthy endpoint.

Loop: drop expired IDs off each buffer's head, fetch batches while a buffer
is below its low-water mark, then sleep until woken by a taker, the next
refill_period, the oldest buffered ID's expiry or the end of a backoff.

Batches adapt to the rate: a batch doubles while refills come sooner than
refill_period / 2 and halves while they come later than 2 * refill_period,
within [initial_batch, max_batch], and never above a node's own max_batch
(read once per node from /v1/info) or a size the node refused as too large.

Failover: endpoints are asked in order from the one that served last; one
that fails is skipped for backoff_initial, doubled per further failure up
to backoff_max, reset by a success. An answer that breaks the rule of
answer.py is a failure of its endpoint too, and is counted. A refusal is the request's, not the
node's: the next endpoint is asked, the refusing one keeps its place, and
the buffer is not refilled again for backoff_max.

Thread-safety: every method but stop() runs on the refill thread.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

from .decode import Layout
from .errors import Unavailable
from .node import InvalidAnswer, Node, NodeFailure, Refused
from .options import Options
from .state import Buffer, Signals


class Refiller:
    def __init__(
        self,
        options: Options,
        nodes: list[Node],
        buffers: Callable[[], list[Buffer]],
        signals: Signals,
        on_layout: Callable[[Layout], None],
    ) -> None:
        self._options = options
        self._nodes = nodes
        self._buffers = buffers
        self._signals = signals
        self._on_layout = on_layout
        self._current = 0
        self._in_flight: Node | None = None
        self._thread = threading.Thread(target=self._loop, name="snowid-refill", daemon=True)
        # Read by Client.stats() from any thread (one attribute read each).
        self.calls = 0  # calls that brought IDs
        self.invalid_answers = 0  # answers discarded by answer.py's rule

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stops the loop, ends a call in flight and waits for the thread."""
        signals = self._signals
        with signals.lock:
            signals.stopping = True
            signals.work.notify_all()
            signals.news.notify_all()
        node = self._in_flight
        if node is not None:
            node.abort()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    def _loop(self) -> None:
        signals = self._signals
        try:
            while True:
                with signals.lock:
                    if signals.stopping:
                        return
                    signals.wake = False
                wake_at = time.monotonic() + self._options.refill_period
                for buffer in self._buffers():
                    self._drop_expired(buffer)
                    wake_at = min(wake_at, self._refill(buffer))
                    try:
                        wake_at = min(wake_at, buffer.ids[0][1] + 0.001)
                    except IndexError:
                        pass
                with signals.lock:
                    if not signals.wake and not signals.stopping:
                        signals.work.wait(max(0.0, wake_at - time.monotonic()))
        finally:
            for node in self._nodes:
                node.close()

    @staticmethod
    def _drop_expired(buffer: Buffer) -> None:
        """Takes expired IDs off the head, so that callers never walk through
        a buffer of stale ones. A caller may take the expired head first; this
        then drops a fresher ID: that costs an ID, never uniqueness."""
        ids = buffer.ids
        now = time.monotonic()
        try:
            while ids[0][1] <= now:
                ids.popleft()
        except IndexError:
            pass

    def _refill(self, buffer: Buffer) -> float:
        """Fetches batches until `buffer` is at or above its low-water mark,
        no endpoint answers or the nodes refuse; returns when to look again."""
        wake_at = math.inf
        while len(buffer.ids) < buffer.low_mark:
            now = time.monotonic()
            if now < buffer.refused_until:
                return buffer.refused_until
            if not self._fetch(buffer):
                for node in self._nodes:
                    if node.retry_at > time.monotonic():
                        wake_at = min(wake_at, node.retry_at)
                return wake_at
        return wake_at

    def _fetch(self, buffer: Buffer) -> bool:
        """One batch from the first endpoint that answers; False if none did."""
        first = self._current
        for i in range(len(self._nodes)):
            index = (first + i) % len(self._nodes)
            node = self._nodes[index]
            started = time.monotonic()
            if node.retry_at > started:
                continue
            count = min(buffer.batch, buffer.batch_cap)
            try:
                ids = self._call(node, buffer.tag, count)
            except NodeFailure as failure:
                if isinstance(failure, InvalidAnswer):
                    self.invalid_answers += 1
                self._signals.tell(buffer, Unavailable(str(failure)), False)
                self._back_off(node, index, started)
                continue
            except Refused as refusal:
                if refusal.too_large:
                    buffer.batch_cap = max(1, count // 2)
                    buffer.batch = min(buffer.batch, buffer.batch_cap)
                    return True
                self._signals.tell(buffer, refusal.error, True)
                buffer.refused_until = started + self._options.backoff_max
                continue
            if self._signals.stopping:
                return False
            node.backoff = 0.0
            self._current = index
            if node.max_batch is not None and node.max_batch < buffer.batch_cap:
                buffer.batch_cap = node.max_batch
                buffer.batch = min(buffer.batch, buffer.batch_cap)
            self._put(buffer, ids, started)
            return True
        return False

    def _call(self, node: Node, tag: str, count: int) -> list[int]:
        self._in_flight = node
        try:
            if self._signals.stopping:
                raise NodeFailure("the client is closing")
            if node.max_batch is None:
                info = node.info()
                limit = info.get("max_batch")
                usable = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
                node.max_batch = limit if usable else 1 << 62
                try:
                    self._on_layout(Layout.from_info(info))
                except ValueError:
                    pass
            ids = node.ids(tag, min(count, node.max_batch))
            self.calls += 1
            return ids
        finally:
            self._in_flight = None

    def _back_off(self, node: Node, index: int, now: float) -> None:
        options = self._options
        node.backoff = (
            options.backoff_initial
            if node.backoff == 0.0
            else min(options.backoff_max, node.backoff * 2)
        )
        node.retry_at = now + node.backoff
        if self._current == index:
            self._current = (index + 1) % len(self._nodes)

    def _put(self, buffer: Buffer, ids: list[int], started: float) -> None:
        """Buffers a batch, adapts the batch size and tells waiting callers."""
        options = self._options
        if buffer.last_refill is not None:
            since = started - buffer.last_refill
            if since < options.refill_period / 2:
                buffer.batch = min(options.max_batch, buffer.batch_cap, buffer.batch * 2)
            elif since > options.refill_period * 2:
                buffer.batch = max(options.initial_batch, buffer.batch // 2)
        buffer.last_refill = started
        buffer.refused_until = 0.0
        buffer.low_mark = max(1, int(options.low_water * buffer.batch))
        buffer.wake_sent = False
        expires = math.inf if buffer.tag else started + options.max_age
        self._signals.deliver(buffer, ids, expires)
