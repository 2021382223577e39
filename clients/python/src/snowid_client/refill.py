"""The refill thread: keeps every Buffer above its low-water mark with
batches from the healthy endpoints, drawn at random.

Loop: drop expired chunks off each buffer, fetch batches while a buffer is
below its low-water mark, then sleep until woken by a taker, the next
refill_period, the oldest buffered ID's expiry or the end of a backoff.

Batches adapt to the rate: a batch doubles while refills come sooner than
refill_period / 2 and halves while they come later than 2 * refill_period,
within [initial_batch, max_batch]. One request asks for no more than the
node's own max_batch (read once per node from /v1/info) or a size the node
refused as too large; a batch above that takes several requests.

Spread and failover (docs/clients.md): each request goes to an endpoint
drawn at random among the healthy ones (not backed off), so that clients
given the same list load every node alike. One that fails is backed off
for backoff_initial, doubled per further failure up to backoff_max, each
wait drawn between half and all of that (jitter), reset by a success; the
request goes at once to another healthy endpoint not yet tried for it. An
answer that breaks the rule of answer.py is a failure of its endpoint too,
and is counted. A refusal is the request's, not the node's: it reaches the
callers, is not asked of the next endpoint, and the buffer is not refilled
again for backoff_max.

Direct calls (direct.py, business IDs) draw their endpoint, back it off and
count their calls here too (draw(), back_off(), count()), from the callers'
threads: so one endpoint's health and one set of counts serve both.

Thread-safety: every method but stop(), draw(), back_off(), count() and the
counters' reads runs on the refill thread; _lock guards the backoffs and
the counters.
"""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Callable

from .decode import Layout
from .errors import Unavailable
from .node import InvalidAnswer, Node, NodeFailure, Refused
from .options import Options
from .state import Buffer, Signals

# _fetch's outcomes besides a batch.
_NONE_ANSWERED = "none answered"
_REFUSED = "refused"


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
        self._random = random.Random()
        self._in_flight: Node | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="snowid-refill", daemon=True)
        # Read by stats() from any thread (one attribute read each). A call
        # is one request for a batch to one node, with what it takes: the
        # node's /v1/info the first time, JSON after a refusal of binary.
        self.calls = 0
        self.failed_calls = 0  # calls that brought no usable answer
        self.invalid_answers = 0  # answers discarded by answer.py's rule

    def start(self) -> None:
        self._thread.start()

    def forget_after_fork(self) -> None:
        """In a child process made by os.fork(): the refill thread stayed
        in the parent, and the connections are the parent's too (a call on
        one would read the parent's answers). A new thread, not started,
        with the connections dropped (closed in this process only) and a
        random draw of the child's own."""
        self._in_flight = None
        for node in self._nodes:
            node.forget_connection()
        self._random.seed()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="snowid-refill", daemon=True)

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float) -> None:
        """Stops the loop, ends a call in flight and waits for the thread
        (at most `timeout`; not at all from the thread itself)."""
        self._signals.stop(self._buffers())
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
                now = time.monotonic()
                wake_at = now + self._options.refill_period
                for buffer in self._buffers():
                    wake_at = min(wake_at, signals.drop_expired(buffer, now) + 0.001)
                    try:
                        wake_at = min(wake_at, self._refill(buffer))
                    except Exception as bug:  # noqa: BLE001 - the thread must not die
                        # Callers get it as an error; the loop goes on.
                        signals.tell(buffer, Unavailable(f"refill failed: {bug!r}"), False)
                        wake_at = min(wake_at, now + self._options.backoff_max)
                with signals.lock:
                    if not signals.wake and not signals.stopping:
                        signals.work.wait(max(0.0, wake_at - time.monotonic()))
        finally:
            for node in self._nodes:
                node.close()

    def _refill(self, buffer: Buffer) -> float:
        """Fetches batches until `buffer` is at or above its low-water mark,
        no endpoint answers or the nodes refuse; returns when to look again."""
        while buffer.left() < buffer.low_mark and not self._signals.stopping:
            if time.monotonic() < buffer.refused_until:
                return buffer.refused_until
            outcome = self._fetch(buffer)
            if outcome is _REFUSED:
                return buffer.refused_until
            if outcome is _NONE_ANSWERED:
                return min((n.retry_at for n in self._nodes), default=math.inf)
        return math.inf

    def _fetch(self, buffer: Buffer) -> str | None:
        """One request, to a healthy endpoint drawn at random, then to the
        others in turn while they fail. None when a batch arrived (or the
        node asked for a smaller count)."""
        tried: set[int] = set()
        while True:
            started = time.monotonic()
            index = self.draw(tried, started)
            if index is None or self._signals.stopping:
                return _NONE_ANSWERED
            tried.add(index)
            node = self._nodes[index]
            count = min(buffer.batch, buffer.batch_cap)
            try:
                ids = self._call(node, buffer.tag, count)
            except NodeFailure as failure:
                self.count(failure)
                self._signals.tell(buffer, Unavailable(str(failure)), False)
                self.back_off(index, started)
                continue
            except Refused as refusal:
                if refusal.too_large:
                    buffer.batch_cap = max(1, count // 2)
                    buffer.batch = min(buffer.batch, buffer.batch_cap)
                    return None
                self._signals.tell(buffer, refusal.error, True)
                buffer.refused_until = started + self._options.backoff_max
                return _REFUSED
            if self._signals.stopping:
                return _NONE_ANSWERED
            self.back_off(index, None)
            self._put(buffer, ids, started)
            return None

    def _call(self, node: Node, tag: str, count: int) -> list[int]:
        self._in_flight = node
        self.count(None)
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
            return node.ids(tag, min(count, node.max_batch))
        finally:
            self._in_flight = None

    def draw(self, tried: set[int], now: float) -> int | None:
        """The index of an endpoint drawn at random among the healthy ones
        not in `tried`; None if there is none."""
        nodes = self._nodes
        healthy = [i for i, n in enumerate(nodes) if i not in tried and n.retry_at <= now]
        return self._random.choice(healthy) if healthy else None

    def soonest(self) -> int:
        """The index of the endpoint whose backoff ends first."""
        return min(range(len(self._nodes)), key=lambda i: self._nodes[i].retry_at)

    def count(self, failure: NodeFailure | None) -> None:
        """Counts a call (failure None) or the failure of one."""
        with self._lock:
            if failure is None:
                self.calls += 1
                return
            self.failed_calls += 1
            if isinstance(failure, InvalidAnswer):
                self.invalid_answers += 1

    def back_off(self, index: int, now: float | None) -> None:
        """After a failure at `now` (None: a success) of endpoint `index`."""
        with self._lock:
            if now is None:
                self._nodes[index].backoff = 0.0
            else:
                self._back_off(self._nodes[index], now)

    def _back_off(self, node: Node, now: float) -> None:
        """Skips `node` for a jittered wait: half to all of its backoff,
        which doubles per failure from backoff_initial up to backoff_max."""
        options = self._options
        node.backoff = (
            options.backoff_initial
            if node.backoff == 0.0
            else min(options.backoff_max, node.backoff * 2)
        )
        node.retry_at = now + self._random.uniform(node.backoff / 2, node.backoff)

    def _put(self, buffer: Buffer, ids: list[int], started: float) -> None:
        """Buffers a batch, adapts the batch size and tells waiting callers."""
        options = self._options
        if buffer.last_refill is not None:
            since = started - buffer.last_refill
            if since < options.refill_period / 2:
                buffer.batch = min(options.max_batch, buffer.batch * 2)
            elif since > options.refill_period * 2:
                buffer.batch = max(options.initial_batch, buffer.batch // 2)
        buffer.last_refill = started
        buffer.refused_until = 0.0
        buffer.set_batch(buffer.batch, options.low_water)
        expires = math.inf if buffer.tag else started + options.max_age
        self._signals.deliver(buffer, ids, expires)
