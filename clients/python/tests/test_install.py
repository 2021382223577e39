"""Installed as Python installs (issue 32, item 6): the wheel that test.sh
built ($CLIENT_WHEEL; built here with python3-build otherwise) goes into a
fresh virtual environment in a temporary directory outside the source tree
(no system packages, no index), and a program there draws IDs
from a live snowidd, with Client and with AsyncClient."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

from nodes import SnowidNode

PACKAGE = Path(__file__).resolve().parents[1]
PYTHON = os.environ.get("CLIENT_PYTHON", "/usr/bin/python3")

APP = """
import asyncio, json, sys
import snowid_client
from importlib.metadata import version
from snowid_client import AsyncClient, Client

url = sys.argv[1]
with Client([url], agent="py-installed") as client:
    sync_ids = client.next_many(1000)
    worker = client.decode(sync_ids[0]).worker

async def main():
    async with AsyncClient([url], agent="py-installed") as client:
        return await client.next_many(1000)

async_ids = asyncio.run(main())
print(json.dumps({"sync": sync_ids, "async": async_ids, "worker": worker,
                  "module": snowid_client.__file__, "version": version("snowid-client"),
                  "declared": snowid_client.__version__}))
"""


def build_wheel(into: str) -> Path:
    package = Path(into) / "package"
    package.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PACKAGE / name, package)
    shutil.copytree(PACKAGE / "src", package / "src")
    subprocess.run(
        [PYTHON, "-m", "build", "--wheel", "--no-isolation", "--outdir", into, str(package)],
        check=True, capture_output=True,
    )
    return next(Path(into).glob("snowid_client-*.whl"))


class InstallTest(unittest.TestCase):
    def test_the_wheel_installs_into_a_fresh_venv_and_draws_ids(self) -> None:
        work = tempfile.mkdtemp(prefix="snowid-py-install-")
        self.addCleanup(shutil.rmtree, work, ignore_errors=True)
        wheel = Path(os.environ.get("CLIENT_WHEEL") or build_wheel(work))
        self.assertFalse(Path(work).resolve().is_relative_to(PACKAGE.parents[1]))
        with zipfile.ZipFile(wheel) as archive:
            metadata = archive.read(next(n for n in archive.namelist()
                                         if n.endswith(".dist-info/METADATA"))).decode()
        self.assertIn("Requires-Python: >=3.9", metadata)

        # A venv of its own, no system packages; Debian's pip installs into
        # it from outside (--python), which spares the seconds of a pip copy.
        venv = Path(work) / "venv"
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
        pip = subprocess.run(
            [PYTHON, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
             "--no-index", str(wheel)],
            capture_output=True, text=True,
        )
        self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)

        node = SnowidNode(16, 2)
        self.addCleanup(node.stop)
        app = Path(work) / "app.py"
        app.write_text(APP)
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        run = subprocess.run(
            [str(venv / "bin" / "python"), str(app), node.url],
            cwd=work, env=environment, capture_output=True, text=True, timeout=60,
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        drawn = json.loads(run.stdout)
        ids = drawn["sync"] + drawn["async"]
        self.assertEqual(len(set(ids)), 2000)
        self.assertEqual(drawn["worker"], 16)
        self.assertTrue(Path(drawn["module"]).is_relative_to(venv), drawn["module"])
        self.assertEqual(drawn["version"], drawn["declared"])


if __name__ == "__main__":
    sys.exit(unittest.main())
