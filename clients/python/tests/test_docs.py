"""Every Python code block of clients/python/README.md and docs/clients.md
is parsed with Python 3.9's grammar and run, each in a process of its own,
against two live snowidd nodes: the documentation's endpoints
(http://10.0.0.1:8080, http://10.0.0.2:8080, http://127.0.0.1:8080) are
replaced by the nodes' addresses, and `token` is "" (the nodes take any);
tag "order-nos" carries a business-ID template.

Blocks after a `<!-- python-test: NAME -->` line are the framework examples
and need the PostgreSQL that test.sh starts (libpq's PG* variables and
DATABASE_URL): `django-settings`, `django-models` (the file orders/models.py
of an app) and `django-usage` run together as a Django project does
(makemigrations, migrate, then the usage); `sqlalchemy` runs as a script.
Then the rows are read back with psycopg2: keyed by distinct IDs that
decode to one of the two nodes."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import unittest
import urllib.error
import urllib.request
from pathlib import Path

from nodes import SnowidNode

REPO = Path(__file__).resolve().parents[3]
DOCUMENTS = [REPO / "clients" / "python" / "README.md", REPO / "docs" / "clients.md"]
BLOCK = re.compile(
    r"(?:<!-- python-test: (?P<name>[a-z-]+) -->\n)?^```python\n(?P<code>.*?)^```",
    re.MULTILINE | re.DOTALL,
)
FRAMEWORK_BLOCKS = {"django-settings", "django-models", "django-usage", "sqlalchemy"}

DJANGO_PROJECT = """
import sys
import django
from django.conf import settings
from django.core.management import call_command

namespace = {}
exec(open(sys.argv[1]).read(), namespace)
settings.configure(DATABASES=namespace["DATABASES"],
                   INSTALLED_APPS=namespace["INSTALLED_APPS"], USE_TZ=True,
                   DEFAULT_AUTO_FIELD="django.db.models.BigAutoField")
django.setup()
call_command("makemigrations", "orders", verbosity=0)
call_command("migrate", verbosity=0)
exec(open(sys.argv[2]).read(), {"__name__": "__main__"})
"""


def _create_business_tag(node: SnowidNode, tag: str, template: str) -> None:
    """POST /v1/tags (no token configured: anyone administers); a 409 says
    the nodes' shared store has it already."""
    body = json.dumps({"tag": tag, "step": 100, "template": template, "zone": "UTC"})
    request = urllib.request.Request(node.url + "/v1/tags", data=body.encode(), method="POST")
    try:
        urllib.request.urlopen(request, timeout=5).close()
    except urllib.error.HTTPError as refusal:
        if refusal.code != 409:
            raise


def blocks(document: Path) -> list[tuple[str, str, int]]:
    """(name or "", code, line) of each Python block of `document`."""
    text = document.read_text()
    return [
        (m["name"] or "", m["code"], text.count("\n", 0, m.start("code")) + 1)
        for m in BLOCK.finditer(text)
    ]


class DocumentationBlocksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.nodes = [SnowidNode(w, 3, "--segment-auto-create", "true") for w in (17, 18)]
        for node in cls.nodes:
            cls.addClassCleanup(node.stop)
            _create_business_tag(node, "order-nos", "ORD-{yyyyMMdd}-{seq:06}")
        cls.found = {d.name: blocks(d) for d in DOCUMENTS}

    def localize(self, code: str) -> str:
        first, second = (n.url for n in self.nodes)
        return (code.replace("http://10.0.0.1:8080", first)
                .replace("http://10.0.0.2:8080", second)
                .replace("http://127.0.0.1:8080", first))

    def run_python(self, directory: str, *arguments: str) -> str:
        run = subprocess.run(
            [sys.executable, *arguments], cwd=directory, capture_output=True, text=True,
            timeout=60,
        )
        self.assertEqual(run.returncode, 0, f"{arguments}: {run.stdout}{run.stderr}")
        return run.stdout

    def test_every_block_parses_as_python_3_9(self) -> None:
        self.assertGreaterEqual(len(self.found["README.md"]), 2)
        self.assertGreaterEqual(len(self.found["clients.md"]), 5)
        for document, found in self.found.items():
            for name, code, line in found:
                with self.subTest(block=f"{document}:{line}"):
                    ast.parse(code, f"{document}:{line}", feature_version=(3, 9))
                    self.assertIn(name, FRAMEWORK_BLOCKS | {""})

    def test_every_plain_block_runs_against_live_nodes(self) -> None:
        with tempfile.TemporaryDirectory(prefix="snowid-py-docs-") as directory:
            for document, found in self.found.items():
                for name, code, line in found:
                    if name:
                        continue
                    with self.subTest(block=f"{document}:{line}"):
                        script = Path(directory) / f"block_{line}.py"
                        script.write_text('token = ""\n' + self.localize(code))
                        self.run_python(directory, str(script))

    def framework_block(self, name: str) -> str:
        code = [c for n, c, _ in self.found["clients.md"] if n == name]
        self.assertEqual(len(code), 1, f"one block {name} in docs/clients.md")
        return self.localize(code[0])

    def require_postgres(self) -> None:
        if "PGPORT" not in os.environ or "DATABASE_URL" not in os.environ:
            self.skipTest("no PostgreSQL: run clients/python/test.sh")

    def test_the_django_example_keys_its_rows_by_snowid_ids(self) -> None:
        self.require_postgres()
        with tempfile.TemporaryDirectory(prefix="snowid-py-django-") as directory:
            app = Path(directory) / "orders"
            app.mkdir()
            (app / "__init__.py").write_text("")
            (app / "models.py").write_text(self.framework_block("django-models"))
            (Path(directory) / "settings.py").write_text(self.framework_block("django-settings"))
            (Path(directory) / "usage.py").write_text(self.framework_block("django-usage"))
            (Path(directory) / "project.py").write_text(textwrap.dedent(DJANGO_PROJECT))
            self.create_database("app")
            self.run_python(directory, "project.py", "settings.py", "usage.py")
        self.check_keys("app", "orders_order")

    def test_the_sqlalchemy_example_keys_its_rows_by_snowid_ids(self) -> None:
        self.require_postgres()
        with tempfile.TemporaryDirectory(prefix="snowid-py-sqlalchemy-") as directory:
            (Path(directory) / "invoices.py").write_text(self.framework_block("sqlalchemy"))
            self.run_python(directory, "invoices.py")
        self.check_keys(os.environ["PGDATABASE"], "invoices")

    def create_database(self, name: str) -> None:
        import psycopg2

        connection = psycopg2.connect(dbname=os.environ["PGDATABASE"])
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
            cursor.execute(f'CREATE DATABASE "{name}"')
        connection.close()

    def check_keys(self, database: str, table: str) -> None:
        """The table's rows: at least 100, keyed by distinct IDs issued by
        one of the two nodes."""
        import psycopg2

        from snowid_client import Client

        connection = psycopg2.connect(dbname=database)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT id FROM {table}")
            keys = [row[0] for row in cursor.fetchall()]
        connection.close()
        self.assertGreaterEqual(len(keys), 100)
        self.assertEqual(len(set(keys)), len(keys))
        with Client([self.nodes[0].url]) as client:
            workers = {client.decode(key).worker for key in keys}
        self.assertLessEqual(workers, {17, 18})


if __name__ == "__main__":
    unittest.main()
