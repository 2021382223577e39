"""Business IDs (Client.next_business) against real snowidd nodes that
share one SQLite segment store and a tokens file, and against a hostile
stand-in for a node that answers GET /v1/business/{tag} with what no node
could have sent (tests/support/hostile_node.py answers only /v1/ids and
/v1/segment): every such answer is refused, counted, named by endpoint,
and the call goes to the next endpoint."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from nodes import SnowidNode
from snowid_client import (
    AsyncClient,
    Client,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unavailable,
)

TOKENS = """[[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["py-orders", "py retired", "py-plain", "py-never"]
"""
TEMPLATE = "ORD-{yyyyMMdd}-{seq:06}"
WELL_FORMED = re.compile(r"ORD-\d{8}-\d{6}")


def admin(node: SnowidNode, method: str, path: str, body: object = None) -> object:
    """An administration call with the admin token; the JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(node.url + path, data=data, method=method)
    request.add_header("Authorization", "Bearer ops-secret")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=5) as answer:
        return json.loads(answer.read())


class BusinessAgainstNodesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.dir = tempfile.mkdtemp(prefix="snowid-py-business-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        tokens = os.path.join(cls.dir, "tokens.toml")
        with open(tokens, "w", encoding="utf-8") as file:
            file.write(TOKENS)
        store = f"sqlite://{os.path.join(cls.dir, 'segments.db')}"
        flags = ("--segment-store", store, "--tokens-file", tokens)
        cls.a = SnowidNode(5, 1, *flags)
        cls.addClassCleanup(cls.a.stop)
        cls.b = SnowidNode(6, 1, *flags)
        cls.addClassCleanup(cls.b.stop)
        for tag in ("py-orders", "py retired"):
            admin(cls.a, "POST", "/v1/tags", {"tag": tag, "step": 100, "template": TEMPLATE,
                                              "zone": "UTC"})
        admin(cls.a, "POST", "/v1/tags", {"tag": "py-plain", "step": 100})
        admin(cls.a, "DELETE", "/v1/tags/py%20retired")

    def client(self, *urls: str, **options: object) -> Client:
        options.setdefault("bearer_token", "orders-secret")
        client = Client(list(urls) or [self.a.url, self.b.url], **options)
        self.addCleanup(client.close)
        return client

    def test_ids_are_well_formed_and_never_repeat(self) -> None:
        client = self.client()
        seen: list[str] = []
        for count in (1, 7, 50, 1, 100):
            ids = client.next_business("py-orders", count)
            self.assertEqual(len(ids), count)
            for id_ in ids:
                self.assertRegex(id_, WELL_FORMED)
            seen += ids
        self.assertEqual(len(seen), len(set(seen)), "an ID was handed out twice")
        [one] = client.next_business("py-orders")
        self.assertNotIn(one, seen)

    def test_the_async_client_gives_them_too(self) -> None:
        async def draw() -> list[str]:
            async with AsyncClient([self.a.url], bearer_token="orders-secret") as client:
                batches = await asyncio.gather(
                    *(client.next_business("py-orders", 10) for _ in range(4))
                )
            return [id_ for batch in batches for id_ in batch]

        ids = asyncio.run(draw())
        self.assertEqual(len(set(ids)), 40)

    def test_a_retired_tag_is_a_failed_precondition_naming_it(self) -> None:
        client = self.client()
        started = time.monotonic()
        with self.assertRaises(FailedPrecondition) as raised:
            client.next_business("py retired", 3)
        self.assertLess(time.monotonic() - started, 1.0)  # not retried to the end
        self.assertEqual(raised.exception.status, 409)
        self.assertIn("py retired", str(raised.exception))
        self.assertIn("retired", str(raised.exception))

    def test_a_wrong_token_is_refused(self) -> None:
        for token in ("", "wrong"):
            client = self.client(bearer_token=token)
            with self.assertRaises(InvalidArgument) as raised:
                client.next_business("py-orders", 2)
            self.assertEqual(raised.exception.status, 401)

    def test_unknown_tags_tags_without_template_and_bad_arguments(self) -> None:
        client = self.client()
        with self.assertRaises(NotFound) as raised:
            client.next_business("py-never")
        self.assertEqual(raised.exception.status, 404)
        # A tag without a template serves segment numbers only (snowidd: 409).
        with self.assertRaises(FailedPrecondition) as raised:
            client.next_business("py-plain")
        self.assertIn("py-plain", str(raised.exception))
        for tag, count in (("", 1), ("x" * 129, 1), ("py-orders", 0), ("py-orders", True)):
            with self.assertRaises(InvalidArgument):
                client.next_business(tag, count)

    def test_a_503_goes_to_the_next_endpoint(self) -> None:
        with HostileBusinessNode("unavailable") as hostile:
            client = self.client(hostile.url, self.a.url)
            for _ in range(50):  # until the 503 was met (each call draws)
                self.assertEqual(len(client.next_business("py-orders", 2)), 2)
                if client.stats().failed_calls:
                    break
            self.assertGreaterEqual(client.stats().failed_calls, 1)
            self.assertEqual(client.stats().invalid_answers, 0)


# What the stand-in answers a request for N business IDs of TAG, by mode: a
# body (status 200, application/json unless the mode says otherwise).
def _hostile_body(mode: str, tag: str, count: int) -> tuple[int, str, bytes]:
    ids: list[object] = [f"ORD-{n:06d}" for n in range(1, count + 1)]
    answer: dict[str, object] = {"tag": tag, "ids": ids}
    if mode == "numbers":
        answer["ids"] = list(range(1, count + 1))
    elif mode == "too_few":
        answer["ids"] = ids[:-1]
    elif mode == "too_many":
        answer["ids"] = ids + ["ORD-X"]
    elif mode == "duplicates":
        answer["ids"] = ids[:-1] + ids[:1]
    elif mode == "blank":
        answer["ids"] = ids[:-1] + [""]
    elif mode == "control":
        answer["ids"] = ids[:-1] + ["ORD-\n1"]
    elif mode == "too_long":
        answer["ids"] = ids[:-1] + ["O" * 257]
    elif mode == "other_tag":
        answer["tag"] = tag + "-other"
    elif mode == "extra_member":
        answer["id"] = ids[0]
    elif mode == "single_id":
        answer = {"tag": tag, "id": ids[0]}
    elif mode == "html":
        return 200, "text/html", b"<html><body>ORD-000001</body></html>"
    elif mode == "wrong_type":
        return 200, "text/plain", json.dumps(answer).encode()
    elif mode == "unavailable":
        return 503, "application/json", b'{"error": "the segment store is unreachable"}'
    return 200, "application/json", json.dumps(answer).encode()


BAD_MODES = (
    "numbers too_few too_many duplicates blank control too_long other_tag extra_member "
    "single_id html wrong_type"
).split()


class HostileBusinessNode:
    """A stand-in node on a loopback port of its own, in this process."""

    def __init__(self, mode: str) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                if url.path.startswith("/v1/business/"):
                    tag = unquote(url.path[len("/v1/business/"):])
                    count = int(parse_qs(url.query).get("count", ["1"])[0])
                    status, kind, body = _hostile_body(mode, tag, count)
                else:  # the refill thread's /v1/info and /v1/ids
                    status, kind, body = 404, "application/json", b'{"error": "not here"}'
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # a client that refused the head went

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def __enter__(self) -> HostileBusinessNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class BusinessAgainstHostileNodeTest(unittest.TestCase):
    def test_every_bad_answer_is_refused_naming_the_node(self) -> None:
        for mode in BAD_MODES:
            with self.subTest(mode=mode), HostileBusinessNode(mode) as hostile:
                with Client([hostile.url]) as client:
                    with self.assertRaises(Unavailable) as raised:
                        client.next_business("orders", 3)
                    self.assertIn(hostile.url, str(raised.exception))
                    self.assertEqual(client.stats().invalid_answers, 1)

    def test_the_valid_answer_of_the_stand_in_is_taken(self) -> None:
        with HostileBusinessNode("valid") as hostile, Client([hostile.url]) as client:
            self.assertEqual(client.next_business("a/b c", 3),
                             ["ORD-000001", "ORD-000002", "ORD-000003"])

    def test_a_bad_node_is_backed_off_and_the_call_fails_over(self) -> None:
        with HostileBusinessNode("duplicates") as bad, HostileBusinessNode("valid") as good:
            with Client([bad.url, good.url], backoff_initial=5.0, backoff_max=5.0) as client:
                for _ in range(20):
                    self.assertEqual(len(client.next_business("orders", 2)), 2)
                self.assertLessEqual(client.stats().invalid_answers, 1)


if __name__ == "__main__":
    unittest.main()
