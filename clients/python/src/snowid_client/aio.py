"""snowid_client.AsyncClient: the Client for asyncio programs.

    async with AsyncClient(["http://127.0.0.1:8080"], agent="api") as client:
        order_id = await client.next()

The same buffer, options, errors and stats as Client; its refills run on a
daemon thread of their own that hands batches to the event loop, so no
network call, and no wait on another thread, ever blocks the loop:
- `await next()` pops from the buffer without suspending while IDs are
  buffered; on an empty buffer it suspends on a future that the refill
  thread resolves (call_soon_threadsafe) when a batch or an error arrives,
  for at most empty_wait (start_wait until the first batch), then raises
  Unavailable.
- `await layout()`, `await decode()` (the first /v1/info), `await
  next_business()` (a call to a node) and `await close()` (the thread's
  end) run in the loop's default executor.

Thread-safety: one AsyncClient may be used from several tasks, loops and
threads at once; make it anywhere (the constructor starts the refill
thread, without I/O on the calling thread).
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import Sequence

from .core import Core, Stats
from .decode import DecodedId, Layout, decode
from .errors import InvalidArgument
from .options import Options

_monotonic = time.monotonic


class AsyncClient:
    """A buffered client of snowidd nodes for asyncio; the options of
    Client (see its docstring), validated at construction."""

    def __init__(self, endpoints: Sequence[str], **options: object) -> None:
        self._core = Core(endpoints, options)
        self._snowflake = self._core.snowflake
        self.options: Options = self._core.options

    async def next(self) -> int:
        """One Snowflake ID; the errors of Client.next()."""
        head = self._snowflake.head
        try:
            id_ = head.popleft()
        except IndexError:
            return await self._core.take_slow_async(self._snowflake)
        if head.expires > _monotonic():
            return id_
        self._core.signals.expired(head)
        return await self._core.take_slow_async(self._snowflake)

    async def next_many(self, count: int) -> list[int]:
        """`count` Snowflake IDs, each as next() would return it."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidArgument(f"count: {count!r} is not a non-negative integer")
        return [await self.next() for _ in range(count)]

    async def next_tag(self, tag: str) -> int:
        """The next number of segment tag `tag`; NotFound if unknown."""
        return await self._core.take_async(self._core.tag_buffer(tag))

    async def next_business(self, tag: str, count: int = 1) -> list[str]:
        """`count` business IDs of tag `tag`: Client.next_business() (its
        errors too), run in the loop's default executor."""
        return await asyncio.get_running_loop().run_in_executor(
            None, self._core.direct.business, tag, count
        )

    async def layout(self) -> Layout:
        """The nodes' layout (/v1/info, read once in the executor)."""
        layout = self._core.cached_layout()
        if layout is not None:
            return layout
        return await asyncio.get_running_loop().run_in_executor(None, self._core.layout)

    async def decode(self, id: int) -> DecodedId:
        """The fields of `id` under the nodes' layout."""
        return decode(await self.layout(), id)

    def stats(self) -> Stats:
        """The client's counters so far (docs/clients.md, "Stats")."""
        return self._core.stats()

    async def close(self) -> None:
        """Stops the refill thread and empties the buffer; later next()
        raises Unavailable."""
        await asyncio.get_running_loop().run_in_executor(None, self._core.close)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
