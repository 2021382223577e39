"""The client against real snowidd nodes: the empty wait, max_age, refusals,
segment tags, the agent, decode and close. Every node is a real process
started by tests/nodes.py; nothing is mocked."""

from __future__ import annotations

import os
import time
import unittest

from nodes import SnowidNode
from snowid_client import Client, InvalidArgument, NotFound, Unavailable


class ClientAgainstNodesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.node = SnowidNode(3, 1, "--segment-auto-create", "true")
        cls.addClassCleanup(cls.node.stop)
        cls.guarded = SnowidNode(4, 1, "--bearer-token", "s3cret")
        cls.addClassCleanup(cls.guarded.stop)

    def client(self, *nodes: SnowidNode, **options: object) -> Client:
        client = Client([n.url for n in nodes or (self.node,)], **options)
        self.addCleanup(client.close)
        return client

    def test_ids_are_distinct_increasing_and_from_the_node(self) -> None:
        client = self.client(initial_batch=100, max_batch=400)
        ids = client.next_many(5000)
        self.assertEqual(ids, sorted(set(ids)))
        for id_ in ids[::500]:
            decoded = client.decode(id_)
            self.assertEqual((decoded.datacenter, decoded.worker), (1, 3))
        self.assertGreater(client.stats().calls, 5000 // 400 - 1)

    def test_decode_matches_the_servers_decode(self) -> None:
        client = self.client()
        for id_ in [client.next() for _ in range(3)] + [0, (1 << 63) - 1]:
            server = self.node.get_json(f"/v1/decode/{id_}")
            mine = client.decode(id_)
            self.assertEqual(
                (mine.timestamp_ms, mine.datacenter, mine.worker, mine.sequence),
                (server["timestamp_ms"], server["datacenter"], server["worker"],
                 server["sequence"]),
            )
            self.assertEqual(int(mine.time.timestamp() * 1000), server["timestamp_ms"])
        with self.assertRaises(InvalidArgument):
            client.decode(-1)
        with self.assertRaises(InvalidArgument):
            client.decode(1 << 63)

    def test_refused_token_surfaces_at_once(self) -> None:
        for token in ["", "wrong"]:
            client = self.client(self.guarded, bearer_token=token, empty_wait=2.0)
            started = time.monotonic()
            with self.assertRaises(InvalidArgument) as raised:
                client.next()
            self.assertLess(time.monotonic() - started, 1.0)  # not the whole empty_wait
            self.assertEqual(raised.exception.status, 401)
        self.assertGreater(self.client(self.guarded, bearer_token="s3cret").next(), 0)

    def test_segment_tag_numbers_and_unknown_tag(self) -> None:
        client = self.client(initial_batch=10, max_batch=40)
        numbers = [client.next_tag("py-orders") for _ in range(100)]
        self.assertEqual(numbers, sorted(set(numbers)))
        self.assertEqual(numbers[0], 1)
        self.assertEqual(client.next_tag("py-invoices"), 1)  # a buffer of its own
        strict = self.client(self.guarded, bearer_token="s3cret")  # no auto-create there
        with self.assertRaises(NotFound) as raised:
            strict.next_tag("py-never-created")
        self.assertEqual(raised.exception.status, 404)
        with self.assertRaises(InvalidArgument):
            client.next_tag("")

    def test_agent_is_sent(self) -> None:
        self.client(agent="py-billing-7").next()
        self.assertIn('"py-billing-7"', self.node.get_text("/metrics"))

    def test_close_stops_the_refill_thread_promptly(self) -> None:
        client = Client([self.node.url])
        client.next()
        started = time.monotonic()
        client.close()
        self.assertLess(time.monotonic() - started, 0.5)
        self.assertFalse(client._core.refiller.alive())
        with self.assertRaises(Unavailable):
            client.next()


    @unittest.skipUnless(hasattr(os, "fork"), "no os.fork() here")
    def test_a_forked_child_hands_out_none_of_the_parents_buffered_ids(self) -> None:
        # A pre-forking server (gunicorn --preload, multiprocessing) makes
        # the client in the parent: the child's copy of the buffer is the
        # parent's to hand out, and the refill thread stayed behind.
        client = self.client(initial_batch=1000)
        client.next()
        time.sleep(0.2)  # the buffer full
        self.assertGreater(client._core.snowflake.left(), 500)
        read_end, write_end = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child's exit code is its result
            try:
                os.close(read_end)
                ids = client.next_many(3000)
                os.write(write_end, " ".join(map(str, ids)).encode())
                os._exit(0)
            finally:
                os._exit(1)
        os.close(write_end)
        parents = set(client.next_many(3000))
        with os.fdopen(read_end, "rb") as pipe:
            childs = set(map(int, pipe.read().split()))
        _, status = os.waitpid(child, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        self.assertEqual(len(childs), 3000)
        self.assertEqual(parents & childs, set())


class NodesDownTest(unittest.TestCase):
    def test_empty_wait_bounds_next_when_both_nodes_are_down(self) -> None:
        nodes = [SnowidNode(5, 2), SnowidNode(6, 2)]
        for node in nodes:
            self.addCleanup(node.kill)
        client = Client([n.url for n in nodes], empty_wait=0.2, initial_batch=50)
        self.addCleanup(client.close)
        client.next()
        for node in nodes:
            node.kill()
        for _ in range(10_000):  # drains what is buffered (at most two batches)
            started = time.monotonic()
            try:
                client.next()
            except Unavailable:
                break
        else:
            self.fail("next() kept answering with both nodes down")
        self.assertLess(time.monotonic() - started, 0.2 + 0.15)

    def test_ids_older_than_max_age_are_dropped_not_handed_out(self) -> None:
        node = SnowidNode(7, 2)
        self.addCleanup(node.kill)
        client = Client([node.url], max_age=0.2, empty_wait=0.1, initial_batch=1000)
        self.addCleanup(client.close)
        first = client.next()
        node.kill()  # the buffer still holds hundreds of IDs, nothing refills it
        time.sleep(0.4)
        with self.assertRaises(Unavailable):
            client.next()
        self.assertGreater(first, 0)


if __name__ == "__main__":
    unittest.main()
