"""stats(): the vocabulary of docs/clients.md, "Stats" (calls,
failed_calls, invalid_answers, ids_received, ids_served, ids_expired),
counted against a real node, a dead endpoint and a hostile one."""

from __future__ import annotations

import time
import unittest

from hostile import HostileNode
from nodes import SnowidNode
from snowid_client import Client, Stats, Unavailable

BATCH = 100


class StatsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.node = SnowidNode(14, 2)
        cls.addClassCleanup(cls.node.stop)

    def client(self, *urls: str, **options: object) -> Client:
        client = Client(list(urls), **{"initial_batch": BATCH, "max_batch": BATCH, **options})
        self.addCleanup(client.close)
        return client

    def test_the_names_are_the_vocabulary(self) -> None:
        self.assertEqual(
            list(Stats.__dataclass_fields__),
            ["calls", "failed_calls", "invalid_answers", "ids_received", "ids_served",
             "ids_expired"],
        )

    def test_calls_received_and_served_against_a_node(self) -> None:
        client = self.client(self.node.url)
        client.next_many(250)
        client.close()  # no refill after this: the counts hold still
        stats = client.stats()
        self.assertEqual(stats.ids_served, 250)
        self.assertEqual(stats.ids_received % BATCH, 0)
        self.assertGreaterEqual(stats.ids_received, 300)
        # Each call brought a batch, but one the close may have cut short.
        self.assertIn(stats.calls - stats.ids_received // BATCH, (0, 1))
        self.assertEqual((stats.failed_calls, stats.invalid_answers, stats.ids_expired), (0, 0, 0))

    def test_ids_that_outlive_max_age_are_counted_expired_not_served(self) -> None:
        client = self.client(self.node.url, max_age=0.2, refill_period=5.0)
        client.next()
        time.sleep(0.5)  # the batch expires; the refill thread drops and refetches
        stats = client.stats()
        self.assertGreaterEqual(stats.ids_expired, BATCH - 1)
        self.assertEqual(stats.ids_served, 1)
        self.assertLessEqual(stats.ids_expired + stats.ids_served, stats.ids_received)

    def test_a_dead_endpoint_counts_failed_calls(self) -> None:
        dead = SnowidNode(15, 2)
        url = dead.url
        dead.kill()
        client = self.client(url, start_wait=0.3)
        with self.assertRaises(Unavailable):
            client.next()
        stats = client.stats()
        self.assertGreaterEqual(stats.calls, 1)
        self.assertEqual(stats.failed_calls, stats.calls)
        self.assertEqual((stats.invalid_answers, stats.ids_received, stats.ids_served), (0, 0, 0))

    def test_an_invalid_answer_is_a_failed_call_and_counted(self) -> None:
        hostile = HostileNode("duplicates")
        self.addCleanup(hostile.stop)
        client = self.client(hostile.url, start_wait=0.3)
        with self.assertRaises(Unavailable):
            client.next()
        stats = client.stats()
        self.assertGreaterEqual(stats.invalid_answers, 1)
        self.assertEqual(stats.failed_calls, stats.invalid_answers)
        self.assertEqual((stats.ids_received, stats.ids_served), (0, 0))


if __name__ == "__main__":
    unittest.main()
