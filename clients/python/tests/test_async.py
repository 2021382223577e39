"""AsyncClient: `await client.next()` from asyncio, against real snowidd
nodes and the hostile stand-in's slow node, with the event loop never
blocked: a heartbeat task that ticks every 10 ms keeps ticking (its longest
gap far below the 0.5 s a blocked loop would show) while refills wait on a
node that trickles its answers and while callers wait on an empty buffer."""

from __future__ import annotations

import asyncio
import time
import unittest

from hostile import HostileNode
from nodes import SnowidNode
from snowid_client import AsyncClient, InvalidArgument, Unavailable

TICK = 0.01
# A blocked loop shows a gap of a whole call (0.5 s); a busy 2-core
# machine adds some tens of ms to a tick.
LONGEST_GAP = 0.25


class Heartbeat:
    """A task that sleeps TICK at a time and records its longest gap."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0
        self._task = asyncio.create_task(self._beat())

    async def _beat(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            self.ticks += 1
            last = now

    async def stop(self) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


class AsyncClientTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.node = SnowidNode(12, 2, "--segment-auto-create", "true")
        cls.addClassCleanup(cls.node.stop)
        cls.slow = HostileNode("slow_body")
        cls.addClassCleanup(cls.slow.stop)

    async def client(self, *urls: str, **options: object) -> AsyncClient:
        client = AsyncClient(list(urls) or [self.node.url], **options)
        self.addAsyncCleanup(client.close)
        return client

    async def test_ids_from_many_tasks_are_distinct_and_from_the_node(self) -> None:
        client = await self.client(initial_batch=100, max_batch=400)
        batches = await asyncio.gather(*(client.next_many(500) for _ in range(8)))
        ids = [i for batch in batches for i in batch]
        self.assertEqual(len(set(ids)), 4000)
        for batch in batches:
            self.assertEqual(batch, sorted(batch))  # one buffer, one node: rising
        decoded = await client.decode(ids[0])
        self.assertEqual((decoded.datacenter, decoded.worker), (2, 12))
        self.assertEqual(await client.next_tag("py-async"), 1)
        stats = client.stats()
        self.assertGreaterEqual(stats.ids_served, 4001)
        self.assertEqual(stats.failed_calls, 0)

    async def test_the_loop_keeps_beating_while_refills_meet_a_slow_node(self) -> None:
        # empty_wait above call_deadline: a refill that meets the slow node
        # first costs its callers up to a whole call.
        client = await self.client(self.slow.url, self.node.url, initial_batch=50,
                                   max_batch=50, backoff_initial=0.05, backoff_max=0.1,
                                   empty_wait=1.5)
        heartbeat = Heartbeat()
        ids: list[int] = []
        until = time.monotonic() + 3.0
        while time.monotonic() < until and client.stats().invalid_answers < 2:
            ids.append(await client.next())
            await asyncio.sleep(0)  # a task among others
        await heartbeat.stop()
        self.assertGreaterEqual(client.stats().invalid_answers, 2, "the slow node was not met")
        self.assertEqual(len(set(ids)), len(ids))
        self.assertGreater(heartbeat.ticks, 10)  # a blocked loop beats once or twice
        self.assertLess(heartbeat.longest, LONGEST_GAP)

    async def test_an_empty_buffer_waits_without_blocking_the_loop(self) -> None:
        client = await self.client(self.slow.url, start_wait=0.8, empty_wait=0.2)
        heartbeat = Heartbeat()
        started = time.monotonic()
        with self.assertRaises(Unavailable):
            await client.next()
        spent = time.monotonic() - started
        await heartbeat.stop()
        self.assertGreaterEqual(spent, 0.8)
        self.assertLess(spent, 0.8 + 0.7)
        self.assertGreater(heartbeat.ticks, 10)  # a blocked loop beats once or twice
        self.assertLess(heartbeat.longest, LONGEST_GAP)

    async def test_a_cancelled_wait_leaves_no_waiter_behind(self) -> None:
        client = await self.client(self.slow.url, start_wait=5.0)
        waiting = asyncio.create_task(client.next())
        await asyncio.sleep(0.1)
        waiting.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await waiting
        self.assertEqual(len(client._core.snowflake.waiters), 0)

    async def test_close_ends_waits_and_later_calls(self) -> None:
        client = await self.client(self.slow.url, start_wait=5.0)
        waiting = asyncio.create_task(client.next())
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await client.close()
        with self.assertRaises(Unavailable):
            await waiting
        self.assertLess(time.monotonic() - started, 1.5)
        with self.assertRaises(Unavailable):
            await client.next()

    async def test_bad_options_and_arguments_are_named(self) -> None:
        with self.assertRaises(InvalidArgument) as raised:
            AsyncClient([self.node.url], start_wait=-1)
        self.assertIn("start_wait", str(raised.exception))
        client = await self.client()
        with self.assertRaises(InvalidArgument):
            await client.next_many(-1)
        with self.assertRaises(InvalidArgument):
            await client.next_tag("")


if __name__ == "__main__":
    unittest.main()
