"""Real snowidd nodes for the tests and the benchmark: started from the
binary in $SNOWIDD on a loopback port the kernel picks, each with a fresh
temporary state directory, stopped by pid, never by name.

SnowidNode(worker, datacenter, *extra_flags) starts one and waits until
/readyz answers 200; kill() sends SIGKILL, stop() SIGTERM; both wait for the
process and remove its directory. Not thread-safe: one thread drives a node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

_PORT = re.compile(r" starting: .*?, http 127\.0\.0\.1:(\d+)")


def snowidd_binary() -> str:
    binary = os.environ.get("SNOWIDD", "")
    if not binary or not os.access(binary, os.X_OK):
        raise RuntimeError(f"SNOWIDD={binary!r}: set it to a snowidd binary")
    return binary


class SnowidNode:
    def __init__(self, worker: int, datacenter: int, *extra: str) -> None:
        self.worker = worker
        self.datacenter = datacenter
        self._dir = tempfile.mkdtemp(prefix="snowid-py-node-")
        self._log_path = os.path.join(self._dir, "snowidd.log")
        args = [
            snowidd_binary(),
            "--http", "127.0.0.1:0",
            "--grpc", "off",
            "--state-dir", os.path.join(self._dir, "state"),
            "--worker-id", str(worker),
            "--datacenter-id", str(datacenter),
            *extra,
        ]
        with open(self._log_path, "wb") as log:
            self._process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        self.killed_at_ms: int | None = None
        try:
            self.port = self._wait_for_port()
            self._wait_until_ready()
        except BaseException:
            self.kill()
            raise
        self.url = f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        with open(self._log_path, encoding="utf-8", errors="replace") as log:
            return log.read()

    def _wait_for_port(self) -> int:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = _PORT.search(self.log())
            if found:
                return int(found.group(1))
            if self._process.poll() is not None:
                break
            time.sleep(0.01)
        raise RuntimeError(f"snowidd did not start: {self.log()}")

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.02)
        raise RuntimeError(f"snowidd on port {self.port} never became ready: {self.log()}")

    def get_json(self, path: str, token: str = "") -> Any:
        request = urllib.request.Request(self.url + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.loads(answer.read())

    def get_text(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=5) as answer:
            return answer.read().decode()

    def issued(self, agent: str) -> int:
        """IDs this node issued to clients of `agent`, from /metrics."""
        line = re.search(
            rf'^snowid_ids_issued_total\{{agent="{re.escape(agent)}"\}} (\d+)$',
            self.get_text("/metrics"),
            re.MULTILINE,
        )
        return int(line.group(1)) if line else 0

    def kill(self) -> None:
        """SIGKILL by pid; records the wall time of the kill in ms."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        self._end(signal.SIGTERM)

    def _end(self, how: signal.Signals) -> None:
        if self._process.poll() is None:
            self._process.send_signal(how)
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self.killed_at_ms = time.time_ns() // 1_000_000  # it is gone by now
        shutil.rmtree(self._dir, ignore_errors=True)
