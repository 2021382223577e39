"""Ready at start (docs/clients.md, "Bounded wait"): a client made at
start-up, whose first refill also opens its first connection, does not
fail its first calls while a node answers; until the first batch has
arrived an empty buffer waits up to start_wait, then empty_wait."""

from __future__ import annotations

import time
import unittest

from nodes import SnowidNode
from snowid_client import Client, Unavailable

COLD_STARTS = 20
SLACK = 0.7  # what a loaded 2-core machine adds to a measured bound


class StartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.node = SnowidNode(9, 1)
        cls.addClassCleanup(cls.node.stop)

    def test_twenty_cold_starts_with_default_options_fail_no_first_call(self) -> None:
        failures = []
        for _ in range(COLD_STARTS):
            client = Client([self.node.url])  # default options
            try:
                first = client.next()  # right away: no batch has arrived yet
                self.assertGreater(first, 0)
            except Unavailable as error:
                failures.append(error)
            finally:
                client.close()
        self.assertEqual(failures, [])

    def test_start_wait_bounds_the_first_wait_and_empty_wait_the_later_ones(self) -> None:
        # A port nothing listens on: every refill fails at once.
        nowhere = SnowidNode(10, 1)
        url = nowhere.url
        nowhere.kill()
        client = Client([url], start_wait=0.6, empty_wait=0.1)
        self.addCleanup(client.close)
        started = time.monotonic()
        with self.assertRaises(Unavailable):
            client.next()
        spent = time.monotonic() - started
        self.assertGreaterEqual(spent, 0.6)
        self.assertLess(spent, 0.6 + SLACK)

        served = Client([self.node.url], start_wait=5.0, empty_wait=0.1)
        self.addCleanup(served.close)
        served.next()  # the first batch arrived: empty_wait from now on
        self.assertTrue(served._core.snowflake.received_any)
        self.assertEqual(served._core._wait_for(served._core.snowflake), 0.1)


if __name__ == "__main__":
    unittest.main()
