"""The client against the hostile stand-in for a node (tests/support/
hostile_node.py): it hands out nothing but IDs a node could have issued
(docs/clients.md, "What a client accepts"). Every bad answer is discarded
whole, counted in stats().invalid_answers, and its endpoint is backed off
while the next one serves; alone, a hostile endpoint gets callers
Unavailable within empty_wait and nothing else."""

from __future__ import annotations

import socketserver
import threading
import time
import tracemalloc
import unittest

from hostile import HostileNode
from snowid_client import Client, Unavailable

# Every mode whose answers a client must refuse from the first batch on
# ("behind" is refused from its second, tested apart).
BAD_MODES = (
    "duplicates padded hex blank floats numbers negative at_2_63 at_2_64 leading_zeros "
    "plus_sign underscores unicode_digits too_many descending truncated_json html "
    "slow_body endless_body huge_body"
).split()
FIRST_VALID_ID = 1_000_000  # hostile_node.py's first ID
BATCH = 100
DEADLINE = 0.5  # call_deadline, the default
EMPTY_WAIT = 0.2  # the default
# What a loaded 2-core machine adds to a bound measured in these tests.
SLACK = 0.7
OPTIONS = dict(
    initial_batch=BATCH,
    max_batch=BATCH,
    call_deadline=DEADLINE,
    backoff_initial=0.05,
    backoff_max=0.2,
)


class _TricklingHeaders(socketserver.BaseRequestHandler):
    """Answers a request with a status line and headers, a byte per 0.1 s:
    what hostile_node.py's slow_body does to a body, done to the head."""

    def handle(self) -> None:
        self.request.recv(4096)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
        try:
            for n in range(len(head)):
                self.request.sendall(head[n : n + 1])
                time.sleep(0.1)
        except OSError:
            pass  # the client went: the point


class HostileNodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        # One node per mode, started side by side, shared by the tests.
        cls.nodes = {m: HostileNode(m) for m in ("valid", "behind", "two_issuers", *BAD_MODES)}
        for node in cls.nodes.values():
            cls.addClassCleanup(node.stop)
        cls.valid = cls.nodes["valid"]

    def hostile(self, mode: str) -> HostileNode:
        return self.nodes[mode]

    def assert_asked(self, hostile: HostileNode, before: int) -> None:
        self.assertGreater(hostile.stats()["id_requests"], before)

    def client(self, *urls: str, **options: object) -> Client:
        client = Client(list(urls), **{**OPTIONS, **options})
        self.addCleanup(client.close)
        return client

    def assert_counted(self, client: Client) -> None:
        """invalid_answers reaches 1 within a call deadline and some."""
        until = time.monotonic() + DEADLINE + SLACK
        while client.stats().invalid_answers < 1 and time.monotonic() < until:
            time.sleep(0.01)
        self.assertGreaterEqual(client.stats().invalid_answers, 1)

    def assert_valid_ids(self, ids: list[int]) -> None:
        self.assertEqual(ids, sorted(set(ids)), "IDs repeated or out of order")
        self.assertGreaterEqual(min(ids), FIRST_VALID_ID)
        self.assertLess(max(ids), 1 << 63)

    def check_refused_beside_a_valid_node(self, mode: str) -> None:
        hostile = self.hostile(mode)
        asked = hostile.stats()["id_requests"]
        client = self.client(hostile.url, self.valid.url, empty_wait=DEADLINE + 3.0)
        ids = client.next_many(3 * BATCH)
        self.assert_valid_ids(ids)
        self.assert_counted(client)
        self.assert_asked(hostile, asked)

    def check_refused_alone(self, mode: str) -> None:
        hostile = self.hostile(mode)
        asked = hostile.stats()["id_requests"]
        client = self.client(hostile.url, empty_wait=EMPTY_WAIT)
        started = time.monotonic()
        with self.assertRaises(Unavailable):
            client.next()
        self.assertLess(time.monotonic() - started, EMPTY_WAIT + SLACK)
        self.assert_counted(client)
        with self.assertRaises(Unavailable):
            client.next()
        self.assert_asked(hostile, asked)

    def test_batches_from_two_issuers_in_turn_are_all_taken(self) -> None:
        hostile = self.hostile("two_issuers")
        client = self.client(hostile.url, empty_wait=DEADLINE + 3.0)
        ids = client.next_many(5 * BATCH)
        self.assertEqual(len(set(ids)), len(ids))
        self.assertEqual(client.stats().invalid_answers, 0)
        self.assertTrue(any(i >= 5_000_000_000 for i in ids), "the second issuer never served")

    def test_a_batch_behind_the_last_one_is_refused(self) -> None:
        hostile = self.hostile("behind")
        client = self.client(hostile.url, empty_wait=1.0)
        first = [client.next() for _ in range(BATCH)]
        self.assertEqual(first, list(range(FIRST_VALID_ID, FIRST_VALID_ID + BATCH)))
        with self.assertRaises(Unavailable):
            client.next()
        self.assert_counted(client)
        self.assertGreaterEqual(hostile.stats()["id_requests"], 2)  # the refused batch was asked

    def test_a_trickling_body_fails_over_within_the_call_deadline(self) -> None:
        hostile = self.hostile("slow_body")
        client = self.client(hostile.url, self.valid.url, empty_wait=5.0)
        started = time.monotonic()
        first = client.next()
        self.assertLess(time.monotonic() - started, DEADLINE + SLACK)
        self.assertGreaterEqual(first, FIRST_VALID_ID)
        self.assertEqual(client.stats().invalid_answers, 1)

    def test_trickling_headers_fail_over_within_the_call_deadline(self) -> None:
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _TricklingHeaders)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        trickling = f"http://127.0.0.1:{server.server_address[1]}"
        client = self.client(trickling, self.valid.url, empty_wait=5.0)
        started = time.monotonic()
        self.assertGreaterEqual(client.next(), FIRST_VALID_ID)
        self.assertLess(time.monotonic() - started, DEADLINE + SLACK)

    def test_an_endless_or_huge_body_is_read_no_further_than_the_batch_can_take(self) -> None:
        for mode in ("endless_body", "huge_body"):
            with self.subTest(mode=mode):
                hostile = self.hostile(mode)
                tracemalloc.start()  # every thread's allocations, the refill thread's too
                try:
                    started = time.monotonic()
                    client = self.client(hostile.url, self.valid.url, empty_wait=5.0)
                    client.next()
                    spent = time.monotonic() - started
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
                # 300 MB read whole took seconds and as many bytes.
                self.assertLess(peak, 4 << 20)
                self.assertLess(spent, DEADLINE + SLACK)
                self.assertEqual(client.stats().invalid_answers, 1)


def _add_mode_tests() -> None:
    """test_<mode>_is_refused_beside_a_valid_node and ..._alone, per mode."""
    for mode in BAD_MODES:
        for name in ("beside_a_valid_node", "alone"):
            check = getattr(HostileNodeTest, f"check_refused_{name}")
            test = lambda self, check=check, mode=mode: check(self, mode)  # noqa: E731
            setattr(HostileNodeTest, f"test_{mode}_is_refused_{name}", test)


_add_mode_tests()

if __name__ == "__main__":
    unittest.main()
