"""The client against the hostile stand-in for a node (tests/support/
hostile_node.py): it hands out nothing but IDs a node could have issued
(docs/clients.md, "What a client accepts"), in binary (what the client asks
for) and in JSON (what it asks of a node from before format=binary). Every
bad answer is discarded whole, counted in stats().invalid_answers, and its
endpoint is backed off while the next one serves; alone, a hostile endpoint
gets callers Unavailable within the wait and nothing else.

Each refill goes to a healthy endpoint drawn at random, so a check that the
hostile endpoint was asked draws until it was (bounded in time). The checks
of the bad modes run side by side, one client and node each."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
import tracemalloc
import unittest
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator
from unittest import mock

from hostile import HostileNode
from snowid_client import Client, Unavailable
from snowid_client import node as node_module

# Every mode whose answers a client must refuse from the first batch on
# ("behind" is refused from its second, tested apart). Asked for binary,
# the modes whose fault is one of the text answer JSON, which a binary
# request refuses too (a proxy that dropped the parameter).
BAD_MODES = (
    "duplicates padded hex blank floats numbers negative at_2_63 at_2_64 leading_zeros "
    "plus_sign underscores unicode_digits too_many descending truncated_json html "
    "slow_body endless_body huge_body"
).split()
FORMATS = ("binary", "json")
FIRST_VALID_ID = 1_000_000  # hostile_node.py's first ID
BATCH = 100
DEADLINE = 0.5  # call_deadline, the default
EMPTY_WAIT = 0.2  # the default
# What a loaded 2-core machine adds to a bound measured in these tests.
SLACK = 0.7
# The longest a test draws until the hostile endpoint was asked.
DRAW_LIMIT = 10.0
OPTIONS = dict(
    initial_batch=BATCH,
    max_batch=BATCH,
    call_deadline=DEADLINE,
    backoff_initial=0.05,
    backoff_max=0.2,
)


@contextlib.contextmanager
def asking(format: str) -> Iterator[None]:
    """Clients made within ask their nodes for `format` first."""
    node_module.ASK_BINARY = format == "binary"
    try:
        yield
    finally:
        node_module.ASK_BINARY = True


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
        modes = ("valid", "behind", "two_issuers", "old_node", *BAD_MODES)
        cls.nodes = {m: HostileNode(m) for m in modes}
        for node in cls.nodes.values():
            cls.addClassCleanup(node.stop)
        for node in cls.nodes.values():
            node.url  # each reads its port once, here, before threads share it
        cls.valid = cls.nodes["valid"]

    def client(self, *urls: str, format: str = "binary", **options: object) -> Client:
        with asking(format):
            client = Client(list(urls), **{**OPTIONS, **options})
        self.addCleanup(client.close)
        return client

    def assert_valid_ids(self, ids: list[int]) -> None:
        # assertTrue, not assertEqual: a diff of two long lists takes minutes.
        self.assertTrue(ids == sorted(set(ids)), "IDs repeated or out of order")
        self.assertGreaterEqual(min(ids), FIRST_VALID_ID)
        self.assertLess(max(ids), 1 << 63)

    def first_call_that_met(self, hostile: HostileNode, format: str) -> tuple[Client, float]:
        """A client of [hostile, valid] whose first refill went to `hostile`
        first (new clients until one did), and how long its first next()
        took."""
        for _ in range(30):  # each draws hostile first with odds 1/2
            client = self.client(hostile.url, self.valid.url, format=format, empty_wait=5.0)
            started = time.monotonic()
            self.assertGreaterEqual(client.next(), FIRST_VALID_ID)
            spent = time.monotonic() - started
            if client.stats().invalid_answers:
                return client, spent
            client.close()
        self.fail(f"{hostile.mode}: 30 clients never asked the hostile endpoint first")

    def check_refused_beside_a_valid_node(self, mode: str, format: str) -> None:
        hostile = self.nodes[mode]
        client = self.client(hostile.url, self.valid.url, format=format, empty_wait=DEADLINE + 3)
        ids: list[int] = []
        until = time.monotonic() + DRAW_LIMIT
        while (len(ids) < 3 * BATCH or not client.stats().invalid_answers) and (
            time.monotonic() < until
        ):
            ids.extend(client.next_many(BATCH))
        self.assert_valid_ids(ids)
        stats = client.stats()
        self.assertGreaterEqual(stats.invalid_answers, 1)
        self.assertGreaterEqual(stats.failed_calls, stats.invalid_answers)

    def check_refused_alone(self, mode: str, format: str) -> None:
        hostile = self.nodes[mode]
        asked = hostile.stats()["id_requests"]
        client = self.client(hostile.url, format=format, empty_wait=EMPTY_WAIT,
                             start_wait=EMPTY_WAIT)
        started = time.monotonic()
        with self.assertRaises(Unavailable):
            client.next()
        self.assertLess(time.monotonic() - started, EMPTY_WAIT + SLACK)
        until = time.monotonic() + DEADLINE + SLACK
        while client.stats().invalid_answers < 1 and time.monotonic() < until:
            time.sleep(0.01)
        self.assertGreaterEqual(client.stats().invalid_answers, 1)
        self.assertGreater(hostile.stats()["id_requests"], asked)
        self.assertEqual(client.stats().ids_served, 0)

    def test_batches_from_two_issuers_in_turn_are_all_taken(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                client = self.client(self.nodes["two_issuers"].url, format=format,
                                     empty_wait=DEADLINE + 3.0)
                ids = client.next_many(5 * BATCH)
                self.assertEqual(len(set(ids)), len(ids))
                self.assertEqual(client.stats().invalid_answers, 0)
                self.assertTrue(any(i >= 5_000_000_000 for i in ids), "the second issuer never served")

    def test_a_batch_behind_the_last_one_is_refused(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                hostile = self.nodes["behind"]
                client = self.client(hostile.url, format=format, empty_wait=1.0)
                first = [client.next() for _ in range(BATCH)]
                self.assertEqual(first, list(range(FIRST_VALID_ID, FIRST_VALID_ID + BATCH)))
                with self.assertRaises(Unavailable):
                    client.next()
                self.assertGreaterEqual(client.stats().invalid_answers, 1)

    def test_a_node_from_before_binary_is_asked_in_json_and_serves(self) -> None:
        old = self.nodes["old_node"]
        client = self.client(old.url, empty_wait=DEADLINE + 3.0)
        ids = client.next_many(3 * BATCH)
        self.assert_valid_ids(ids)
        stats = client.stats()
        self.assertEqual((stats.invalid_answers, stats.failed_calls), (0, 0))
        # The refusal of binary and the JSON request after it are one call.
        self.assertIn(stats.calls - stats.ids_received // BATCH, (0, 1))  # 1: under way
        self.assertFalse(client._core.refiller._nodes[0].binary)  # JSON from then on

    def test_a_trickling_body_fails_over_within_the_call_deadline(self) -> None:
        for format in FORMATS:
            with self.subTest(format=format):
                client, spent = self.first_call_that_met(self.nodes["slow_body"], format)
                self.assertLess(spent, DEADLINE + SLACK)
                self.assertEqual(client.stats().invalid_answers, 1)

    def test_trickling_headers_fail_over_within_the_call_deadline(self) -> None:
        server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _TricklingHeaders)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        trickling = f"http://127.0.0.1:{server.server_address[1]}"
        for _ in range(30):
            client = self.client(trickling, self.valid.url, empty_wait=5.0)
            started = time.monotonic()
            self.assertGreaterEqual(client.next(), FIRST_VALID_ID)
            self.assertLess(time.monotonic() - started, DEADLINE + SLACK)
            if client.stats().failed_calls:
                return
        self.fail("30 clients never asked the trickling endpoint first")

    def test_a_name_of_several_unreachable_addresses_is_left_within_the_call_deadline(
        self,
    ) -> None:
        # Three loopback addresses whose listen queue is full drop the
        # connection attempt (as a dead host does), then the valid node's.
        port = int(self.valid.url.rsplit(":", 1)[1])
        dead = ("127.0.0.2", "127.0.0.3", "127.0.0.4")
        for address in dead:
            listener = socket.socket()
            self.addCleanup(listener.close)
            listener.bind((address, port))
            listener.listen(0)
            for _ in range(3):  # fill the queue: later connects get no answer
                filler = socket.socket()
                self.addCleanup(filler.close)
                filler.setblocking(False)
                filler.connect_ex((address, port))
        resolve = socket.getaddrinfo

        def several(host: str, *rest: object, **named: object) -> list:
            if host != "several.test":
                return resolve(host, *rest, **named)
            tcp = (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "")
            return [(*tcp, (a, port)) for a in (*dead, "127.0.0.1")]

        with mock.patch.object(socket, "getaddrinfo", several):
            node = node_module.Node(f"http://several.test:{port}", {}, DEADLINE)
            self.addCleanup(node.close)
            started = time.monotonic()
            with self.assertRaises(node_module.NodeFailure):
                node.ids("", 10)
            # create_connection gave each address the whole deadline: 1.5 s.
            self.assertLess(time.monotonic() - started, DEADLINE + SLACK)

    def test_an_endless_or_huge_body_is_read_no_further_than_the_batch_can_take(self) -> None:
        for mode in ("endless_body", "huge_body"):
            for format in FORMATS:
                with self.subTest(mode=mode, format=format):
                    tracemalloc.start()  # every thread's allocations, the refill thread's too
                    try:
                        client, spent = self.first_call_that_met(self.nodes[mode], format)
                        _, peak = tracemalloc.get_traced_memory()
                    finally:
                        tracemalloc.stop()
                    # 300 MB read whole took seconds and as many bytes.
                    self.assertLess(peak, 4 << 20)
                    self.assertLess(spent, DEADLINE + SLACK)
                    self.assertEqual(client.stats().invalid_answers, 1)


def _add_mode_tests() -> None:
    """test_every_bad_mode_in_<format>_is_refused_<beside_a_valid_node|alone>:
    each runs its check for every bad mode at once (each check waits on
    its own client and node), then reports each mode as a subtest."""
    for format in FORMATS:
        for name in ("beside_a_valid_node", "alone"):
            check = getattr(HostileNodeTest, f"check_refused_{name}")

            def test(self: HostileNodeTest, check=check, format=format) -> None:
                with ThreadPoolExecutor(max_workers=len(BAD_MODES)) as pool:
                    outcomes = {m: pool.submit(check, self, m, format) for m in BAD_MODES}
                for mode, outcome in outcomes.items():
                    with self.subTest(mode=mode, format=format):
                        outcome.result()  # raises what the check raised

            setattr(HostileNodeTest, f"test_every_bad_mode_in_{format}_is_refused_{name}", test)


_add_mode_tests()

if __name__ == "__main__":
    unittest.main()
