#!/usr/bin/env python3
"""Benchmark of the Python client, in one run, per thread (not run by ctest):

  (a) Client.next() from the buffer, against a live snowidd node;
  (b) the floor: the fastest in-process Snowflake generator this file's
      author could write in pure Python (a lock around a packed
      (ms, sequence) state and one time.time_ns() read);
  (c) one HTTP round trip per ID: GET /v1/id on a keep-alive connection;
  and the HTTP round trips the client made for the IDs it served.

Usage: SNOWIDD=path/to/snowidd python3 clients/python/bench.py [--ids N]
       [--threads 1,4]  (PYTHONPATH=clients/python/src unless installed)
Starts its own node on a free loopback port, stops it by pid at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from typing import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))

from nodes import SnowidNode  # noqa: E402
from snowid_client import Client  # noqa: E402

TWITTER_EPOCH_MS = 1288834974657


class FloorGenerator:
    """Twitter's layout (41/5/5/12) in pure Python: one lock, one clock read.
    When a millisecond's 4096 sequence numbers are used up it moves to the
    next millisecond (borrowing at most a few ms from the clock)."""

    def __init__(self, datacenter: int, worker: int) -> None:
        self._lock = threading.Lock()
        self._node = (datacenter << 17) | (worker << 12)
        self._last = 0  # (ms since the epoch) << 22 | sequence of the last ID
        self._clock = time.time_ns

    def next(self) -> int:
        with self._lock:
            now = (self._clock() // 1_000_000 - TWITTER_EPOCH_MS) << 22
            last = self._last
            if now > last:
                self._last = now
            elif last & 0xFFF == 0xFFF:
                self._last = (last | 0xFFF) + 1  # the next ms, sequence 0
            else:
                self._last = last + 1
            return self._last | self._node


def http_take(url: str) -> Callable[[], int]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))

    def take() -> int:
        connection.request("GET", "/v1/id")
        return int(json.loads(connection.getresponse().read())["id"])

    return take


def per_thread_ns(make_take: Callable[[], Callable[[], int]], threads: int, count: int) -> float:
    """Mean over the threads of each thread's ns per ID, all running at once."""
    results = [0.0] * threads
    start_line = threading.Barrier(threads)

    def run(index: int) -> None:
        take = make_take()
        start_line.wait()
        started = time.perf_counter_ns()
        for _ in range(count):
            take()
        results[index] = (time.perf_counter_ns() - started) / count

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(results) / threads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=2_000_000, help="IDs per thread for (a), (b)")
    parser.add_argument("--http-ids", type=int, default=5_000, help="IDs per thread for (c)")
    parser.add_argument("--threads", default="1,4")
    args = parser.parse_args()
    node = SnowidNode(1, 1)
    try:
        # empty_wait: the machine is shared and loaded; a starved refill
        # thread must slow the measurement down, not end it.
        client = Client([node.url], agent="py-bench", empty_wait=5.0)
        floor = FloorGenerator(1, 1)
        client.next_many(200_000)  # warm-up: the batch grows to max_batch
        print(f"python {sys.version.split()[0]}, snowidd {node.url}, max_batch "
              f"{client.options.max_batch}; ns/ID per thread")
        print("threads  (a) client.next  (b) floor  (c) HTTP /v1/id  (a)/(b)  (c)/(a)  IDs/trip")
        for threads in map(int, args.threads.split(",")):
            trips = client.stats().calls
            a = per_thread_ns(lambda: client.next, threads, args.ids)
            served_trips = client.stats().calls - trips
            b = per_thread_ns(lambda: floor.next, threads, args.ids)
            c = per_thread_ns(lambda: http_take(node.url), threads, args.http_ids)
            per_trip = threads * args.ids / max(1, served_trips)
            print(f"{threads:7d}  {a:15.0f}  {b:9.0f}  {c:15.0f}  {a / b:7.2f}  "
                  f"{c / a:7.0f}  {per_trip:8.0f}")
        client.close()
    finally:
        node.stop()


if __name__ == "__main__":
    main()
