#!/usr/bin/env python3
"""A hostile stand-in for a snowidd node (or a proxy in front of one), for
the clients' tests: every language's client (C++, Java, Go, Python, Node)
is pointed at it to show that it hands its application nothing but IDs a
node could have issued.

    hostile_node.py MODE [--port P] [--lifetime S]

prints the port it listens on (127.0.0.1, a free one unless --port) as the
first line of its standard output, then serves HTTP/1.1 with keep-alive
until it gets SIGTERM (the test that started it stops it by its pid) or S
seconds have passed (300 unless given: a test that crashed leaves nothing
running for long).

Every mode answers GET /v1/info as a node with the default layout and
max_batch 10000 does. GET /v1/ids?count=N and GET /v1/segment/TAG?count=N
are answered as MODE says:

  valid           N IDs as decimal strings, strictly increasing, each batch
                  above the one before (IDs from 1000000 up): the only mode
                  whose answers a client may hand out
  duplicates      every ID twice within the batch
  padded          IDs with a space before and after
  hex             every other ID as "0x..." (of the ID before it, as are the
                  other "every other" forms: read as a number, it repeats)
  blank           every other ID ""
  floats          IDs as JSON numbers with a fraction (16.25, 16.75, ...)
  numbers         IDs as JSON integers instead of strings
  negative        every other ID negative
  at_2_63         every other ID 9223372036854775808 (2^63)
  at_2_64         every other ID 18446744073709551616 (2^64)
  leading_zeros   IDs with a leading 0 ("01000000")
  plus_sign       IDs with a leading "+"
  underscores     IDs with "_" between digits ("1_000_000")
  unicode_digits  IDs in Arabic-Indic digits (U+0660..U+0669)
  too_many        N + 1 IDs
  descending      N IDs in decreasing order
  behind          each batch starts again at 1000000 (below the last one),
                  with the same Snowid-Issuer
  two_issuers     valid batches from two issuers taken in turn, as a proxy
                  in front of two nodes gives them: one's from 1000000 up,
                  the other's from 5000000000 up, so that every other batch
                  is below the one before; a client must take them all
  truncated_json  a JSON text cut short (its Content-Length matches)
  html            status 200 with an HTML page
  slow_body       a valid answer, one byte every 0.3 s
  endless_body    a chunked body that never ends
  huge_body       Content-Length 300 MB, valid JSON as far as it is read
  old_node        valid JSON answers, but format=binary refused with 400 and
                  a JSON error, as a node from before format=binary answers

A request with format=binary (docs/clients.md) is answered in binary, 8
bytes a number, little-endian, Content-Type application/octet-stream, as
snowidd answers it, with the mode's fault where it has a binary form:
duplicates, negative, at_2_63 (the sign bit set), too_many, descending,
behind, two_issuers, truncated_json (a body that is not a whole number of
8-byte numbers), html, slow_body, endless_body and huge_body; the modes
that are faults of the text (padded, hex, blank, floats, numbers,
leading_zeros, plus_sign, underscores, unicode_digits, at_2_64) answer the
JSON text instead, as a proxy that dropped the parameter would: status 200,
Content-Type application/json.

Every answer to /v1/ids and /v1/segment carries a Snowid-Issuer header, as
snowidd sends: "00000000000000a1" (and "00000000000000b2" for every other
batch of two_issuers).

Counts of what it answered are at GET /hostile/stats as JSON:
{"mode": ..., "id_requests": n, "info_requests": n}.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

FIRST_ID = 1_000_000
OTHER_FIRST_ID = 5_000_000_000
ISSUER = "00000000000000a1"
OTHER_ISSUER = "00000000000000b2"
INFO = {
    "version": "0.1.0",
    "worker_id": 0,
    "datacenter_id": 0,
    "max_batch": 10000,
    "layout": {
        "datacenter_bits": 5,
        "worker_bits": 5,
        "sequence_bits": 12,
        "timestamp_bits": 41,
        "total_bits": 63,
        "time_unit_ms": 1,
        "epoch_ms": 1288834974657,
        "epoch": "2010-11-04T01:42:54.657Z",
        "sequence_position": "low",
        "max_datacenter_id": 31,
        "max_worker_id": 31,
        "max_id": "9223372036854775807",
        "ids_per_unit": 4096,
    },
}
ARABIC_INDIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


class State:
    """The mode and the counters, shared by the server's threads."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.lock = threading.Lock()
        self.next_id = FIRST_ID
        self.next_other = OTHER_FIRST_ID
        self.id_requests = 0
        self.info_requests = 0

    def take(self, count: int) -> tuple[str, list[int]]:
        """The issuer and the next `count` IDs of the valid sequence."""
        with self.lock:
            self.id_requests += 1
            if self.mode == "two_issuers" and self.id_requests % 2 == 0:
                first = self.next_other
                self.next_other = first + count
                return OTHER_ISSUER, list(range(first, first + count))
            first = FIRST_ID if self.mode == "behind" else self.next_id
            self.next_id = first + count
        return ISSUER, list(range(first, first + count))


def batch(mode: str, ids: list[int]) -> list:
    """The "ids" array MODE answers for the valid IDs `ids`."""
    # Every other ID replaced by `bad` of the one before it: a client that
    # reads the bad form as a number hands out that ID twice.
    every_other = lambda bad: [  # noqa: E731
        bad(ids[n - 1]) if n % 2 else str(i) for n, i in enumerate(ids)
    ]
    if mode == "duplicates":
        return [str(ids[n // 2]) for n in range(len(ids))]
    if mode == "padded":
        return [f" {i} " for i in ids]
    if mode == "hex":
        return every_other(hex)
    if mode == "blank":
        return every_other(lambda i: "")
    if mode == "floats":
        return [i + 0.25 + 0.5 * (n % 2) for n, i in enumerate(ids)]
    if mode == "numbers":
        return list(ids)
    if mode == "negative":
        return every_other(lambda i: str(-i))
    if mode == "at_2_63":
        return every_other(lambda i: str(2**63))
    if mode == "at_2_64":
        return every_other(lambda i: str(2**64))
    if mode == "leading_zeros":
        return [f"0{i}" for i in ids]
    if mode == "plus_sign":
        return [f"+{i}" for i in ids]
    if mode == "underscores":
        return [f"{i:_}" for i in ids]
    if mode == "unicode_digits":
        return [str(i).translate(ARABIC_INDIC) for i in ids]
    if mode == "too_many":
        return [str(i) for i in ids] + [str(ids[-1] + 1)]
    if mode == "descending":
        return [str(i) for i in reversed(ids)]
    return [str(i) for i in ids]


# The modes whose fault has a binary form, and that form of the valid IDs.
BINARY_FAULTS = {
    "duplicates": lambda ids: [ids[n // 2] for n in range(len(ids))],
    "negative": lambda ids: [-ids[n - 1] if n % 2 else i for n, i in enumerate(ids)],
    "at_2_63": lambda ids: [2**63 if n % 2 else i for n, i in enumerate(ids)],
    "too_many": lambda ids: ids + [ids[-1] + 1],
    "descending": lambda ids: list(reversed(ids)),
}
BINARY_AS_IS = "valid behind two_issuers truncated_json html slow_body endless_body huge_body".split()


def binary(numbers: list[int]) -> bytes:
    """`numbers` as format=binary carries them (2^63 as its 64 bits)."""
    return b"".join(struct.pack("<Q", n % 2**64) for n in numbers)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.issuer = None
        url = urlsplit(self.path)
        if url.path == "/hostile/stats":
            with self.state.lock:
                stats = {
                    "mode": self.state.mode,
                    "id_requests": self.state.id_requests,
                    "info_requests": self.state.info_requests,
                }
            return self.send_body(200, json.dumps(stats).encode())
        if url.path == "/v1/info":
            with self.state.lock:
                self.state.info_requests += 1
            return self.send_body(200, json.dumps(INFO).encode())
        if url.path != "/v1/ids" and not url.path.startswith("/v1/segment/"):
            return self.send_body(404, b'{"error":"not found"}')
        query = parse_qs(url.query)
        try:
            count = int(query.get("count", ["1"])[0])
        except ValueError:
            count = 0
        if not 1 <= count <= INFO["max_batch"]:
            return self.send_body(400, b'{"error":"count must be 1..10000"}')
        mode = self.state.mode
        in_binary = query.get("format") == ["binary"]
        if in_binary and mode == "old_node":
            return self.send_body(400, b'{"error":"format \'binary\' is not json or text"}')
        self.issuer, ids = self.state.take(count)
        if in_binary and (mode in BINARY_FAULTS or mode in BINARY_AS_IS):
            return self.send_binary(mode, ids)
        body = json.dumps({"ids": batch(mode, ids)}, ensure_ascii=False).encode()
        if mode == "truncated_json":
            return self.send_body(200, body[: len(body) // 2])
        if mode == "html":
            page = b"<html><head><title>Welcome</title></head><body>It works!</body></html>"
            return self.send_body(200, page, "text/html")
        if mode == "slow_body":
            return self.send_slowly(body)
        if mode == "endless_body":
            return self.send_endlessly()
        if mode == "huge_body":
            return self.send_huge(body)
        self.send_body(200, body)

    def send_binary(self, mode: str, ids: list[int]) -> None:
        body = binary(BINARY_FAULTS.get(mode, lambda same: same)(ids))
        kind = "application/octet-stream"
        if mode == "truncated_json":
            return self.send_body(200, body[:-3], kind)
        if mode == "html":
            page = b"<html><head><title>Welcome</title></head><body>It works!</body></html>"
            return self.send_body(200, page, "text/html")
        if mode == "slow_body":
            return self.send_slowly(body, kind)
        if mode == "endless_body":
            return self.send_endlessly(binary([FIRST_ID]) * 8000, b"", kind)
        if mode == "huge_body":
            return self.send_huge(b"", binary([FIRST_ID]) * 8000, kind)
        self.send_body(200, body, kind)

    def send_response(self, code: int, message: str | None = None) -> None:
        super().send_response(code, message)
        if getattr(self, "issuer", None):
            self.send_header("Snowid-Issuer", self.issuer)

    def send_body(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def send_slowly(self, body: bytes, kind: str = "application/json") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for n in range(len(body)):
            self.wfile.write(body[n : n + 1])
            self.wfile.flush()
            time.sleep(0.3)

    def send_endlessly(
        self,
        chunk: bytes = b'"1000000",' * 6000,
        head: bytes = b'6\r\n{"ids"\r\n2\r\n:[\r\n',
        kind: str = "application/json",
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
        self.wfile.write(head)
        while True:  # until the client goes (a write then fails)
            self.wfile.write(framed)

    def send_huge(
        self, start: bytes, filler: bytes = b'"1000000",' * 6000, kind: str = "application/json"
    ) -> None:
        size = 300 * 1024 * 1024
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        head = start[: start.index(b"[") + 1] if start else b""
        self.wfile.write(head)
        sent = len(head)
        while sent + len(filler) <= size:
            self.wfile.write(filler)
            sent += len(filler)
        self.wfile.write(b" " * (size - sent))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        pass  # a client that went away mid-answer is the point of some modes


MODES = (
    "valid two_issuers duplicates padded hex blank floats numbers negative at_2_63 at_2_64 "
    "leading_zeros plus_sign underscores unicode_digits too_many descending behind "
    "truncated_json html "
    "slow_body endless_body huge_body old_node"
).split()


def main() -> int:
    parser = argparse.ArgumentParser(description="a hostile stand-in for a snowidd node")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--lifetime", type=float, default=300.0)
    arguments = parser.parse_args()
    Handler.state = State(arguments.mode)
    server = Server(("127.0.0.1", arguments.port), Handler)
    print(server.server_address[1], flush=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    lifetime = threading.Timer(arguments.lifetime, server.shutdown)
    lifetime.daemon = True
    lifetime.start()
    server.serve_forever(poll_interval=0.05)
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
