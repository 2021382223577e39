"""What Client and AsyncClient share: the options, the buffers, the refill
thread, the direct calls (direct.py), the layout, the stats, and the slow paths of taking an ID (a chunk
ran out, an ID expired, the buffer is empty).

Waiting on an empty buffer: a taker registers a Waiter (state.py) and waits
at most empty_wait, or start_wait (if longer) while no batch has arrived
yet: a client made at start-up opens its first connection with its first
refill. A thread waits on Signals.news; a coroutine on a future of its own
loop, which the refill thread resolves through call_soon_threadsafe. The
lock is held only for a few operations on the buffer, never across I/O or
a wait, so a coroutine that takes it does not hold up its loop.

Giving up the GIL: a taker that moves to the next chunk while a refill is
wanted sleeps for 0 s, outside the lock. Under the GIL a thread that spins
on next() would otherwise keep the refill thread from the interpreter for
the switch interval (5 ms) after each of its socket calls; this way the
refill thread runs within a chunk (at most 1,024 IDs).

os.fork(): a child process gets a copy of the buffers, whose IDs the
parent hands out as well, and no refill thread. Right after the fork the
child drops what it copied (forget_after_fork, registered once for every
live client) and starts a refill thread of its own at its first take that
finds the buffer empty; a child that never takes an ID costs no call.

Thread-safety: every method may be called from any thread; the async ones
from any event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Sequence

from .decode import Layout
from .errors import InvalidArgument, SnowidError, Unavailable
from .node import Node, NodeFailure, Refused
from .direct import DirectCaller
from .options import Options, check_tag, make_options
from .refill import Refiller
from .state import Buffer, Signals, Waiter

_monotonic = time.monotonic
_sleep = time.sleep


@dataclass(frozen=True)
class Stats:
    """What a client did since it was made (docs/clients.md, "Stats")."""

    calls: int  # requests for IDs sent to nodes, whatever became of them
    failed_calls: int  # of those, no usable answer: no connection, deadline, 5xx, invalid
    invalid_answers: int  # of those, answers discarded by "What a client accepts"
    ids_received: int  # IDs (and segment numbers) taken into the buffers
    ids_served: int  # handed to the application
    ids_expired: int  # dropped unissued after max_age


class Core:
    def __init__(self, endpoints: Sequence[str], options: dict[str, object]) -> None:
        self.options: Options = make_options(endpoints, **options)
        headers = {"Accept": "application/octet-stream, application/json"}
        if self.options.bearer_token:
            headers["Authorization"] = f"Bearer {self.options.bearer_token}"
        if self.options.agent:
            headers["X-Snowid-Agent"] = self.options.agent
        self._headers = headers
        self.signals = Signals()
        self.snowflake = Buffer("", self.options.initial_batch, self.options.low_water)
        self._tags: dict[str, Buffer] = {}
        self._layout: Layout | None = None
        self._layout_lock = threading.Lock()
        nodes = [Node(e, headers, self.options.call_deadline) for e in self.options.endpoints]
        self.refiller = Refiller(
            self.options, nodes, self.buffers, self.signals, self._set_layout
        )
        self.direct = DirectCaller(self.options, headers, self.refiller)
        self._start_in_child = False
        self.refiller.start()
        _LIVE.add(self)

    # Taking, for threads ----------------------------------------------------

    def take(self, buffer: Buffer) -> int:
        """An ID from `buffer`, as next() takes it (the hot path inlined
        there is this function's first lines)."""
        head = buffer.head
        try:
            id_ = head.popleft()
        except IndexError:
            return self.take_slow(buffer)
        if head.expires > _monotonic():
            return id_
        self.signals.expired(head)
        return self.take_slow(buffer)

    def take_slow(self, buffer: Buffer) -> int:
        """The head chunk ran out: the next chunk's first ID, or a wait."""
        if self._start_in_child:
            self._start_refill_in_child()
        signals = self.signals
        with signals.lock:
            id_ = signals.take_locked(buffer)
        if id_ is None:
            return self._wait_and_take(buffer)
        if buffer.wake_sent:
            _sleep(0)  # the refill thread's turn at the GIL (module docstring)
        return id_

    def _wait_and_take(self, buffer: Buffer) -> int:
        signals = self.signals
        deadline = _monotonic() + self._wait_for(buffer)
        waiter = Waiter()
        with signals.lock:
            buffer.waiters.append(waiter)
            try:
                while waiter.id is None:
                    id_ = self._check_locked(buffer, deadline)
                    if id_ is not None:
                        return id_
                    signals.news.wait(deadline - _monotonic())
                return waiter.id
            finally:
                if waiter.id is None:
                    buffer.waiters.remove(waiter)

    def _wait_for(self, buffer: Buffer) -> float:
        options = self.options
        if buffer.received_any:
            return options.empty_wait
        return max(options.empty_wait, options.start_wait)

    def _check_locked(self, buffer: Buffer, deadline: float) -> int | None:
        """Under the lock, for a waiter: an ID if one is buffered; raises if
        the client closed, the nodes refuse, or the wait is over; else wakes
        the refill thread and returns None (wait for news)."""
        signals = self.signals
        id_ = signals.take_locked(buffer)
        if id_ is not None:
            return id_
        if signals.stopping:
            raise Unavailable("the client is closed")
        if buffer.refused and buffer.error is not None:
            raise buffer.error.fresh()
        if deadline - _monotonic() <= 0:
            raise self._empty_error(buffer)
        signals.wake_locked(buffer)
        return None

    def _empty_error(self, buffer: Buffer) -> SnowidError:
        if buffer.error is not None:
            return buffer.error.fresh()
        wait_ms = round(self._wait_for(buffer) * 1000)
        return Unavailable(f"no {buffer.describe()} buffered and none fetched within {wait_ms} ms")

    # Taking, for coroutines -------------------------------------------------

    async def take_async(self, buffer: Buffer) -> int:
        head = buffer.head
        try:
            id_ = head.popleft()
        except IndexError:
            return await self.take_slow_async(buffer)
        if head.expires > _monotonic():
            return id_
        self.signals.expired(head)
        return await self.take_slow_async(buffer)

    async def take_slow_async(self, buffer: Buffer) -> int:
        """take_slow() for a coroutine: suspends (never blocks) on a future
        of its loop while the buffer is empty. An ID handed to a waiter that
        has just stopped waiting (cancelled, or served from the buffer
        meanwhile) is lost, never handed out twice."""
        signals = self.signals
        with signals.lock:
            id_ = signals.take_locked(buffer)
        if id_ is not None:
            if buffer.wake_sent:
                _sleep(0)
            return id_
        news = _LoopWaker(asyncio.get_running_loop())
        waiter = Waiter(news)
        deadline = _monotonic() + self._wait_for(buffer)
        with signals.lock:
            buffer.waiters.append(waiter)
        try:
            while True:
                with signals.lock:
                    id_ = waiter.id
                    if id_ is None:
                        id_ = self._check_locked(buffer, deadline)
                    if id_ is not None:
                        return id_
                    future = news.arm()  # before the lock goes: no news is missed
                await asyncio.wait((future,), timeout=max(0.0, deadline - _monotonic()))
        finally:
            with signals.lock:
                if waiter.id is None:
                    buffer.waiters.remove(waiter)

    # Tags, layout, stats, close --------------------------------------------

    def tag_buffer(self, tag: str) -> Buffer:
        buffer = self._tags.get(tag)
        if buffer is not None:
            return buffer
        check_tag(tag)
        with self.signals.lock:
            buffer = self._tags.get(tag)
            if buffer is None:
                buffer = Buffer(tag, self.options.initial_batch, self.options.low_water)
                self._tags[tag] = buffer
            return buffer

    def buffers(self) -> list[Buffer]:
        with self.signals.lock:
            return [self.snowflake, *self._tags.values()]

    def layout(self) -> Layout:
        """The nodes' layout, from the first endpoint's /v1/info that
        answers (read once, then cached). Blocking I/O the first time."""
        layout = self._layout
        if layout is not None:
            return layout
        with self._layout_lock:
            if self._layout is None:
                self._layout = self._fetch_layout()
            return self._layout

    def cached_layout(self) -> Layout | None:
        return self._layout

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

    def stats(self) -> Stats:
        refiller, signals = self.refiller, self.signals
        buffers = self.buffers()
        with signals.lock:
            received, expired = signals.ids_received, signals.ids_expired
            held = signals.ids_discarded + sum(b.left() for b in buffers)
        return Stats(
            calls=refiller.calls,
            failed_calls=refiller.failed_calls,
            invalid_answers=refiller.invalid_answers,
            ids_received=received,
            ids_served=max(0, received - expired - held),
            ids_expired=expired,
        )

    def forget_after_fork(self) -> None:
        """In a child process made by os.fork() (module docstring)."""
        self._layout_lock = threading.Lock()
        self.signals.forget_after_fork([self.snowflake, *self._tags.values()])
        self.refiller.forget_after_fork()
        self.direct.forget_after_fork()
        self._start_in_child = not self.signals.stopping

    def _start_refill_in_child(self) -> None:
        with self.signals.lock:
            start, self._start_in_child = self._start_in_child, False
        if start:
            self.refiller.start()

    def close(self) -> None:
        """Stops the refill thread (ending its call in flight) and empties
        the buffers. Blocks for at most call_deadline + 1 s."""
        self.refiller.stop(self.options.call_deadline + 1.0)
        self.direct.close()
        for buffer in self.buffers():
            self.signals.discard(buffer)


# The clients of this process that are not yet collected (closed ones
# included: forgetting their buffers costs nothing).
_LIVE: weakref.WeakSet[Core] = weakref.WeakSet()


def _forget_after_fork() -> None:
    for core in list(_LIVE):
        core.forget_after_fork()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)


class _LoopWaker:
    """Wakes a coroutine waiting on an empty buffer from the refill thread:
    arm() (under the lock) makes the future the next news resolves."""

    __slots__ = ("_loop", "_future")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._future: asyncio.Future[None] | None = None

    def arm(self) -> asyncio.Future[None]:
        self._future = self._loop.create_future()
        return self._future

    def __call__(self) -> None:
        future = self._future
        if future is not None:
            try:
                self._loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # the loop is closed: nobody waits
                pass


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)

