"""The hostile stand-in for a node that every client is tested against
(tests/support/hostile_node.py, its modes in its docstring), run as a
process of its own and stopped by its pid, never by name.

HostileNode(mode) starts one, `url` reads its port; stats() is its
GET /hostile/stats. Not thread-safe: one thread drives a node.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parents[3] / "tests" / "support" / "hostile_node.py"


class HostileNode:
    def __init__(self, mode: str) -> None:
        """Starts the process; `url` waits for its port (so that several
        start side by side)."""
        self.mode = mode
        self._process = subprocess.Popen(
            [sys.executable, str(SCRIPT), mode, "--lifetime", "300"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            assert self._process.stdout is not None
            port = self._process.stdout.readline().strip()
            if not port.isdigit():
                raise RuntimeError(f"hostile_node.py {self.mode} printed no port: {port!r}")
            self._url = f"http://127.0.0.1:{port}"
        return self._url

    def stats(self) -> Any:
        with urllib.request.urlopen(self.url + "/hostile/stats", timeout=5) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
