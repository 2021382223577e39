"""Option validation: each bad option is refused at construction with
InvalidArgument naming it, before any thread or connection exists."""

from __future__ import annotations

import unittest

from snowid_client import Client, InvalidArgument

GOOD = ["http://127.0.0.1:1"]


class OptionValidationTest(unittest.TestCase):
    def assert_refused(self, name: str, endpoints: object = GOOD, **options: object) -> None:
        with self.assertRaises(InvalidArgument) as raised:
            Client(endpoints, **options)  # type: ignore[arg-type]
        self.assertIn(name, str(raised.exception))
        self.assertIsInstance(raised.exception, ValueError)

    def test_endpoints_must_be_a_non_empty_list_of_http_base_urls(self) -> None:
        self.assert_refused("endpoints", [])
        self.assert_refused("endpoints", "http://127.0.0.1:8080")
        for bad in ["127.0.0.1:8080", "https://h:1", "http://h:99999", "http://h:1/v1",
                    "http://:80", "http://h:1?x=1", "http://u@h:1", "http://h:x"]:
            self.assert_refused("endpoints", ["http://127.0.0.1:8080", bad])

    def test_agent_follows_the_servers_rule(self) -> None:
        for bad in ["1abc", "a_b", "a b", "x" * 65, "é"]:
            self.assert_refused("agent", agent=bad)

    def test_bearer_token_has_no_line_break(self) -> None:
        self.assert_refused("bearer_token", bearer_token="a\r\nX-Evil: 1")
        self.assert_refused("bearer_token", bearer_token=7)

    def test_durations_are_positive_seconds(self) -> None:
        self.assert_refused("call_deadline", call_deadline=0)
        self.assert_refused("call_deadline", call_deadline="1")
        self.assert_refused("empty_wait", empty_wait=-0.1)
        self.assert_refused("start_wait", start_wait=-1)
        self.assert_refused("start_wait", start_wait=float("nan"))
        self.assert_refused("refill_period", refill_period=float("inf"))
        # Beyond what threading's waits take: refused here, not an
        # OverflowError from next() and close() later.
        self.assert_refused("empty_wait", empty_wait=1e10)
        self.assert_refused("call_deadline", call_deadline=1e300)
        Client(["http://127.0.0.1:9"], max_age=(2**31 - 1) / 1000).close()
        self.assert_refused("max_age", max_age=0.001)
        self.assert_refused("backoff_initial", backoff_initial=0)
        self.assert_refused("backoff_max", backoff_initial=2, backoff_max=1)

    def test_batches_and_low_water_are_in_range(self) -> None:
        self.assert_refused("low_water", low_water=0)
        self.assert_refused("low_water", low_water=1.5)
        self.assert_refused("initial_batch", initial_batch=0)
        self.assert_refused("initial_batch", initial_batch=True)
        self.assert_refused("max_batch", initial_batch=100, max_batch=99)
        self.assert_refused("max_batch", max_batch=1_000_001)

    def test_unknown_options_are_named(self) -> None:
        self.assert_refused("call_deadline_ms", call_deadline_ms=500)

    def test_defaults_are_the_options_table_of_docs_clients_md(self) -> None:
        with Client(GOOD) as client:
            o = client.options
            self.assertEqual(
                (o.bearer_token, o.agent, o.call_deadline, o.empty_wait, o.start_wait,
                 o.low_water, o.initial_batch, o.max_batch, o.refill_period, o.max_age,
                 o.backoff_initial, o.backoff_max),
                ("", "", 0.5, 0.2, 2.0, 0.5, 1000, 10_000, 0.5, 10.0, 0.1, 5.0),
            )


if __name__ == "__main__":
    unittest.main()
