"""Python 3.9 and later (pyproject.toml's requires-python): only Debian 12's
3.11 is installed here, so every module of the package is parsed with
3.9's grammar (ast feature_version; this catches `match`, parenthesized
context managers, `except*` and the like), defers its annotations (`from
__future__ import annotations`, so that `X | None` is never evaluated),
and calls none of the library functions and arguments added after 3.9
that the checks below name. Running on a real 3.9 is not done here."""

from __future__ import annotations

import ast
import unittest
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "snowid_client"

# Module attributes, methods and keyword arguments of 3.10 and later.
NEWER_MODULE_ATTRIBUTES = {
    ("asyncio", "TaskGroup"), ("asyncio", "timeout"), ("asyncio", "timeout_at"),
    ("itertools", "pairwise"), ("typing", "TypeAlias"), ("typing", "ParamSpec"),
    ("typing", "Self"), ("typing", "Never"), ("typing", "TypeGuard"),
}
NEWER_METHODS = {"bit_count"}
NEWER_NAMES = {"aiter", "anext", "ExceptionGroup", "BaseExceptionGroup"}
NEWER_KEYWORDS = {"strict", "slots", "kw_only", "match_args"}


class Python39Test(unittest.TestCase):
    def modules(self) -> list[Path]:
        modules = sorted(PACKAGE.glob("*.py"))
        self.assertGreater(len(modules), 5)
        return modules

    def test_every_module_parses_with_the_grammar_of_3_9(self) -> None:
        for module in self.modules():
            with self.subTest(module=module.name):
                ast.parse(module.read_text(), str(module), feature_version=(3, 9))

    def test_every_module_defers_its_annotations(self) -> None:
        for module in self.modules():
            with self.subTest(module=module.name):
                tree = ast.parse(module.read_text())
                futures = {alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                           and node.module == "__future__" for alias in node.names}
                self.assertIn("annotations", futures)

    def test_no_module_calls_what_3_9_lacks(self) -> None:
        for module in self.modules():
            tree = ast.parse(module.read_text())
            annotations = {
                id(inner)
                for node in ast.walk(tree)
                for annotation in _annotations(node)
                for inner in ast.walk(annotation)
            }
            for node in ast.walk(tree):
                if id(node) in annotations:
                    continue  # deferred: never evaluated
                where = f"{module.name}:{getattr(node, 'lineno', '?')}"
                if isinstance(node, ast.Attribute):
                    self.assertNotIn(node.attr, NEWER_METHODS, where)
                    if isinstance(node.value, ast.Name):
                        self.assertNotIn((node.value.id, node.attr), NEWER_MODULE_ATTRIBUTES, where)
                elif isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        self.assertNotIn((node.module, alias.name), NEWER_MODULE_ATTRIBUTES, where)
                elif isinstance(node, ast.Name):
                    self.assertNotIn(node.id, NEWER_NAMES, where)
                elif isinstance(node, ast.keyword):
                    self.assertNotIn(node.arg, NEWER_KEYWORDS, where)
                elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
                    # X | Y of types outside an annotation is evaluated at once.
                    for side in (node.left, node.right):
                        self.assertFalse(
                            isinstance(side, ast.Name) and side.id in {"int", "str", "None",
                                                                       "float", "bytes"},
                            f"{where}: a type union evaluated at run time",
                        )


def _annotations(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.arg) and node.annotation is not None:
        return [node.annotation]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
        return [node.returns]
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


if __name__ == "__main__":
    unittest.main()
