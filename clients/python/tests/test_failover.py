"""The acceptance test: four threads draw 1,000,000 IDs through one client
with two live nodes while the serving node is killed with SIGKILL part-way.
Every call must succeed, every ID must be distinct and decode to one of the
two nodes, and the killed node's IDs must not be stamped after its death."""

from __future__ import annotations

import threading
import time
import unittest

from nodes import SnowidNode
from snowid_client import Client, SnowidError

TOTAL = 1_000_000
THREADS = 4
KILL_AFTER = 300_000
# One refill's worth of slack for the clock reads around the kill.
TOLERANCE_MS = 50


class FailoverTest(unittest.TestCase):
    def test_a_million_ids_from_four_threads_while_a_node_is_killed(self) -> None:
        first, second = SnowidNode(1, 1), SnowidNode(2, 2)
        self.addCleanup(first.kill)
        self.addCleanup(second.kill)
        # empty_wait of a few seconds, as in every client's kill test
        # (docs/clients.md, "How they are tested"): on a loaded 2-core
        # machine a refill can take longer than the default 200 ms.
        client = Client([first.url, second.url], agent="py-failover", empty_wait=2.0)
        self.addCleanup(client.close)
        drawn: list[list[int]] = [[] for _ in range(THREADS)]
        errors: list[BaseException] = []
        slowest = [0.0] * THREADS

        def draw(index: int) -> None:
            out = drawn[index]
            take, keep = client.next, out.append
            try:
                for _ in range(TOTAL // THREADS):
                    started = time.monotonic()
                    keep(take())
                    spent = time.monotonic() - started
                    if spent > slowest[index]:
                        slowest[index] = spent
            except SnowidError as error:
                errors.append(error)

        threads = [threading.Thread(target=draw, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        while sum(map(len, drawn)) < KILL_AFTER and any(t.is_alive() for t in threads):
            time.sleep(0.001)
        first.kill()
        for thread in threads:
            thread.join()

        self.assertEqual(errors, [])
        self.assertLess(max(slowest), client.options.empty_wait + 0.1)
        ids = [id_ for out in drawn for id_ in out]
        self.assertEqual(len(ids), TOTAL)
        self.assertEqual(len(set(ids)), TOTAL, "duplicate IDs")
        self.check_origins(client, ids, first, second)

    def check_origins(self, client: Client, ids: list[int], killed: SnowidNode,
                      survivor: SnowidNode) -> None:
        assert killed.killed_at_ms is not None
        per_node = {(killed.datacenter, killed.worker): 0, (survivor.datacenter, survivor.worker): 0}
        latest_of_killed = 0
        for id_ in ids:
            decoded = client.decode(id_)
            origin = (decoded.datacenter, decoded.worker)
            self.assertIn(origin, per_node, f"ID {id_} decodes to an unknown node")
            per_node[origin] += 1
            if origin == (killed.datacenter, killed.worker):
                latest_of_killed = max(latest_of_killed, decoded.timestamp_ms)
        self.assertLessEqual(latest_of_killed, killed.killed_at_ms + TOLERANCE_MS)
        # Refills are spread at random: each node served part of the first 300,000.
        self.assertGreaterEqual(per_node[(killed.datacenter, killed.worker)], KILL_AFTER // 10)
        self.assertGreater(per_node[(survivor.datacenter, survivor.worker)], 0)


if __name__ == "__main__":
    unittest.main()
