"""The rule a batch is taken by (snowid_client/answer.py) at its edges,
and the layout a /v1/info answer may give, without a node: what
hostile_node.py does not send."""

from __future__ import annotations

import json
import unittest

import struct

from snowid_client import Layout
from snowid_client.answer import Watermarks, body_limit, parse_batch, parse_binary

LARGEST = (1 << 63) - 1


def body(ids: object) -> bytes:
    return json.dumps({"ids": ids}).encode()


class ParseBatchTest(unittest.TestCase):
    def test_takes_zero_the_largest_id_and_fewer_than_asked(self) -> None:
        self.assertEqual(parse_batch(body(["0", "7", str(LARGEST)]), 5), [0, 7, LARGEST])

    def test_refuses_what_int_would_read(self) -> None:
        for bad in ["1\n", "1,2", "1.0", "1e3", "\u0661", " 1", "0x1", "", "-0", "00", str(1 << 63)]:
            with self.subTest(id=bad), self.assertRaises(ValueError):
                parse_batch(body(["0", bad]), 5)

    def test_refuses_what_is_not_an_array_of_1_to_n_strings(self) -> None:
        for bad in [b"", b"[]", b"{}", body([]), body("1"), body(["1", "2", "3"]), b"[" * 100_000,
                    b'{"ids":["1"]', body([True]), body([None])]:
            with self.subTest(body=bad[:20]), self.assertRaises(ValueError):
                parse_batch(bad, 2)

    def test_ignores_members_beside_ids(self) -> None:
        answer = json.dumps({"ids": ["5", "6"], "issuer": "a1", "later": {"x": [1]}}).encode()
        self.assertEqual(parse_batch(answer, 2), [5, 6])

    def test_the_largest_batch_fits_its_body_limit(self) -> None:
        ids = [str(LARGEST - 10_000 + n) for n in range(10_000)]
        self.assertLessEqual(len(body(ids)), body_limit(10_000))  # spaced: 23 bytes an ID


def binary(*numbers: int) -> bytes:
    return b"".join(struct.pack("<Q", n % (1 << 64)) for n in numbers)


class ParseBinaryTest(unittest.TestCase):
    def test_takes_little_endian_rising_ids_below_2_63(self) -> None:
        self.assertEqual(parse_binary(binary(0, 7, LARGEST), 3), [0, 7, LARGEST])
        self.assertEqual(parse_binary(binary(1 << 40), 5), [1 << 40])  # fewer than asked
        self.assertEqual(parse_binary(bytes([1, 0, 0, 0, 0, 0, 0, 0]), 1), [1])

    def test_refuses_a_length_that_is_not_1_to_n_whole_numbers(self) -> None:
        for bad in [b"", binary(1)[:7], binary(1, 2) + b"\0", binary(1, 2, 3)]:
            with self.subTest(size=len(bad)), self.assertRaises(ValueError):
                parse_binary(bad, 2)
        self.assertEqual(body_limit(2, binary=True), 16)

    def test_refuses_the_sign_bit_and_what_does_not_rise(self) -> None:
        for bad in [(1 << 63,), (5, 1 << 63), ((1 << 64) - 1, 3), (5, 5), (6, 5), (1, 3, 2)]:
            with self.subTest(ids=bad), self.assertRaises(ValueError):
                parse_binary(binary(*bad), 3)


class WatermarksTest(unittest.TestCase):
    def test_a_batch_must_start_above_the_last_of_its_issuer_and_tag(self) -> None:
        marks = Watermarks()
        marks.record("", "a1", [10, 20])
        with self.assertRaises(ValueError):
            marks.check("", "a1", [20, 30])
        marks.check("", "a1", [21])
        marks.check("", "b2", [1])  # another issuer: its own line
        marks.check("orders", "a1", [1])  # another tag: its own line
        marks.record("", None, [50])
        with self.assertRaises(ValueError):
            marks.check("", None, [50])  # without the header: endpoint and tag

    def test_remembers_the_issuers_it_saw_last(self) -> None:
        marks = Watermarks()
        marks.record("", "first", [100])
        for n in range(64):
            marks.record("", f"other-{n}", [100])
        marks.check("", "first", [1])  # forgotten: one of 64 newer issuers took its place
        marks.record("", "other-0", [200])
        with self.assertRaises(ValueError):
            marks.check("", "other-0", [150])


class LayoutFromInfoTest(unittest.TestCase):
    def test_refuses_a_layout_no_node_has(self) -> None:
        layout = {"timestamp_bits": 41, "datacenter_bits": 5, "worker_bits": 5,
                  "sequence_bits": 12, "time_unit_ms": 1, "epoch_ms": 1288834974657,
                  "sequence_position": "low"}
        self.assertEqual(Layout.from_info({"layout": layout}).total_bits, 63)
        for bad in [{"timestamp_bits": 10**300}, {"sequence_bits": -1}, {"worker_bits": 6},
                    {"time_unit_ms": 0}, {"epoch_ms": 2**60}, {"datacenter_bits": True}]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                Layout.from_info({"layout": {**layout, **bad}})


if __name__ == "__main__":
    unittest.main()
