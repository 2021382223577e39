"""The backoff of a failed endpoint (docs/clients.md, "Spread and
failover"): backoff_initial, doubled per further failure up to
backoff_max, each wait drawn between half and all of that (jitter), reset
by a success; and the draw of an endpoint among the healthy ones. Checked
on the refill thread's own functions, without a thread or a node."""

from __future__ import annotations

import unittest

from snowid_client.node import Node
from snowid_client.options import make_options
from snowid_client.refill import Refiller
from snowid_client.state import Signals

ENDPOINTS = ["http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"]


def refiller(**options: object) -> Refiller:
    made = make_options(ENDPOINTS, **options)
    nodes = [Node(e, {}, made.call_deadline) for e in ENDPOINTS]
    return Refiller(made, nodes, lambda: [], Signals(), lambda layout: None)


class BackoffTest(unittest.TestCase):
    def test_each_wait_is_drawn_between_half_and_all_of_the_doubled_backoff(self) -> None:
        refill = refiller(backoff_initial=0.1, backoff_max=0.8)
        node = refill._nodes[0]
        for expected in [0.1, 0.2, 0.4, 0.8, 0.8]:
            refill._back_off(node, 100.0)
            self.assertAlmostEqual(node.backoff, expected)
            self.assertGreaterEqual(node.retry_at - 100.0, expected / 2)
            self.assertLessEqual(node.retry_at - 100.0, expected)

    def test_clients_that_failed_together_come_back_apart(self) -> None:
        waits = set()
        for _ in range(20):
            refill = refiller(backoff_initial=1.0, backoff_max=1.0)
            refill._back_off(refill._nodes[0], 0.0)
            waits.add(round(refill._nodes[0].retry_at, 6))
        self.assertGreater(len(waits), 15)


if __name__ == "__main__":
    unittest.main()
