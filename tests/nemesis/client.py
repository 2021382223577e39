#!/usr/bin/env python3
"""The nemesis's client: draws IDs from every node all the time and records
every answer.

    client.py OUT COUNT TIMEOUT_S PACE_MS NAME=HOST:PORT...

One thread per node sends `GET /v1/ids?count=COUNT&format=binary` over a
keep-alive connection, one request at a time and at most one every PACE_MS
(0: as fast as answers come; soaks pace their clients so that the records
stay in memory for the checker), and appends one record per
request to OUT: the send and receive times (CLOCK_REALTIME, ns: the clock
the harness logs its faults with; libfaketime moves only the nodes'),
the node, the HTTP status (0: no answer within TIMEOUT_S or a broken
connection, after which the thread connects again), the Snowid-Issuer
token, and the IDs (8-byte little-endian each, as the node sent them).
Runs until SIGTERM, then flushes and exits 0. read_records() reads OUT back.
"""

import array
import http.client
import signal
import struct
import sys
import threading
import time

HEADER = struct.Struct("<qqBHQI")  # t_send, t_recv, node, status, issuer, count
ISSUER_NONE = 0


class Record:
    __slots__ = ("t_send", "t_recv", "node", "status", "issuer", "ids")

    def __init__(self, t_send, t_recv, node, status, issuer, ids):
        self.t_send, self.t_recv, self.node = t_send, t_recv, node
        self.status, self.issuer, self.ids = status, issuer, ids

    def __repr__(self):
        return "Record(node=%d status=%d issuer=%016x t_send=%d t_recv=%d ids=%s)" % (
            self.node, self.status, self.issuer, self.t_send, self.t_recv,
            list(self.ids[:3]) + (["..."] if len(self.ids) > 3 else []))


def encode(record):
    body = struct.pack("<%dQ" % len(record.ids), *record.ids)
    return HEADER.pack(record.t_send, record.t_recv, record.node, record.status, record.issuer,
                       len(record.ids)) + body


def read_records(path):
    """Every whole record of the file (a cut-off last one is left out)."""
    with open(path, "rb") as f:
        data = f.read()
    records, at = [], 0
    while at + HEADER.size <= len(data):
        t_send, t_recv, node, status, issuer, count = HEADER.unpack_from(data, at)
        end = at + HEADER.size + 8 * count
        if end > len(data):
            break
        ids = array.array("Q")  # 8 bytes an ID, not a Python int each
        ids.frombytes(data[at + HEADER.size:end])
        if sys.byteorder != "little":
            ids.byteswap()
        records.append(Record(t_send, t_recv, node, status, issuer, ids))
        at = end
    return records


def _issuer(text):
    try:
        return int((text or "")[:16], 16)
    except ValueError:
        return ISSUER_NONE


class Drawer(threading.Thread):
    def __init__(self, index, host, port, count, timeout, pace, sink, stopping):
        super().__init__(daemon=True)
        self.pace = pace
        self.index, self.host, self.port = index, host, port
        self.path = "/v1/ids?count=%d&format=binary" % count
        self.timeout, self.sink, self.stopping = timeout, sink, stopping

    def run(self):
        connection = None
        while not self.stopping.is_set():
            if connection is None:
                connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            t_send = time.time_ns()
            status, issuer, ids = 0, ISSUER_NONE, ()
            try:
                connection.request("GET", self.path)
                reply = connection.getresponse()
                body = reply.read()
                status = reply.status
                if status == 200:
                    issuer = _issuer(reply.getheader("Snowid-Issuer"))
                    ids = struct.unpack("<%dQ" % (len(body) // 8), body[:len(body) // 8 * 8])
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = None
            t_recv = time.time_ns()
            self.sink(Record(t_send, t_recv, self.index, status, issuer, ids))
            # A refusing node is asked 50 times a second.
            rest = max(self.pace if status == 200 else 0.02, self.pace) - (t_recv - t_send) / 1e9
            if rest > 0:
                self.stopping.wait(rest)


def main(argv):
    out, count, timeout, pace = argv[1], int(argv[2]), float(argv[3]), float(argv[4]) / 1000
    nodes = [(name.split("=", 1)[1].rsplit(":", 1)) for name in argv[5:]]
    lock = threading.Lock()
    stopping = threading.Event()
    f = open(out, "ab", buffering=1 << 20)

    def sink(record):
        data = encode(record)
        with lock:
            if not f.closed:
                f.write(data)

    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    drawers = [Drawer(i, host, int(port), count, timeout, pace, sink, stopping)
               for i, (host, port) in enumerate(nodes)]
    for d in drawers:
        d.start()
    while not stopping.wait(0.5):
        with lock:
            f.flush()
    for d in drawers:
        d.join(timeout + 1)
    with lock:
        f.flush()
        f.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
