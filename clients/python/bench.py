#!/usr/bin/env python3
"""Benchmark of the Python client's sustained rate, in one run (not run by
ctest): per thread count (1 and 4 by default), in alternating rounds,

  (a) Client.next() at default options, against live snowidd nodes;
  (b) a plain in-process Snowflake generator: one threading.Lock, one
      time.time_ns() read, a 12-bit sequence per millisecond, and a wait
      for the next millisecond when the sequence runs out (so it never
      issues more than 4,096 IDs a ms, as a node does not);

each drawn by all the threads at once for --seconds; printed: both rates
(IDs a second, all threads together, the median of the rounds), the ratio
(a)/(b), and the client's requests per 10,000 IDs.

Usage: SNOWIDD=path/to/snowidd python3 clients/python/bench.py
       [--threads 1,4] [--seconds 2] [--rounds 3] [--nodes 1]
       (PYTHONPATH=clients/python/src unless installed)
Starts its own nodes on free loopback ports, stops them by pid at the end.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from typing import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests"))

from nodes import SnowidNode  # noqa: E402
from snowid_client import Client  # noqa: E402

TWITTER_EPOCH_MS = 1288834974657


class LockedGenerator:
    """Twitter's layout (41/5/5/12): what an application would write in
    place of the client. Thread-safe through one lock."""

    def __init__(self, datacenter: int, worker: int) -> None:
        self._lock = threading.Lock()
        self._node = (datacenter << 17) | (worker << 12)
        self._ms = 0
        self._sequence = 0

    def next(self) -> int:
        with self._lock:
            ms = time.time_ns() // 1_000_000 - TWITTER_EPOCH_MS
            if ms > self._ms:
                self._ms, self._sequence = ms, 0
            elif self._sequence < 0xFFF:
                self._sequence += 1
            else:  # 4,096 this ms: wait for the next one
                while ms <= self._ms:
                    ms = time.time_ns() // 1_000_000 - TWITTER_EPOCH_MS
                self._ms, self._sequence = ms, 0
            return (self._ms << 22) | self._node | self._sequence


def rate(take: Callable[[], int], threads: int, seconds: float) -> float:
    """IDs a second that `threads` threads calling `take` draw together."""
    counts = [0] * threads
    start_line = threading.Barrier(threads + 1)
    stop = threading.Event()

    def run(index: int) -> None:
        drawn = 0
        start_line.wait()
        while not stop.is_set():
            for _ in range(1000):
                take()
            drawn += 1000
        counts[index] = drawn

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    start_line.wait()
    started = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for worker in workers:
        worker.join()
    return sum(counts) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,4")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1)
    args = parser.parse_args()
    nodes = [SnowidNode(1 + n, 1) for n in range(args.nodes)]
    try:
        client = Client([n.url for n in nodes], agent="py-bench")  # default options
        generator = LockedGenerator(1, 1)
        client.next_many(200_000)  # warm-up: batches grow to max_batch
        print(f"python {sys.version.split()[0]}, {len(nodes)} snowidd node(s), client "
              f"defaults (max_batch {client.options.max_batch}), {args.rounds} rounds of "
              f"{args.seconds} s; IDs/s of all threads together, median of the rounds")
        print("threads  (a) client.next()  (b) locked generator  (a)/(b)  requests/10k IDs")
        for threads in map(int, args.threads.split(",")):
            a, b = [], []
            calls, served = client.stats().calls, client.stats().ids_served
            for _ in range(args.rounds):
                a.append(rate(client.next, threads, args.seconds))
                b.append(rate(generator.next, threads, args.seconds))
            stats = client.stats()
            per_10k = 10_000 * (stats.calls - calls) / max(1, stats.ids_served - served)
            a_rate, b_rate = statistics.median(a), statistics.median(b)
            print(f"{threads:7d}  {a_rate:17,.0f}  {b_rate:20,.0f}  {a_rate / b_rate:7.2f}  "
                  f"{per_10k:16.2f}")
            print(f"         rounds: a {[round(x) for x in a]}, b {[round(x) for x in b]}")
        print(f"client stats: {client.stats()}")
        client.close()
    finally:
        for node in nodes:
            node.stop()


if __name__ == "__main__":
    main()
