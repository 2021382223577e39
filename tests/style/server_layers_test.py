#!/usr/bin/env python3
"""Holds snowidd's folders to their layers (docs/design.md, "The server's
folders"): every quoted #include of a file under src/server/ must name a
header of its own folder or of a folder below it.

    config  <- service <- net <- http | grpc | resp | thrift <- src/server/

A protocol never includes another protocol's header, and nothing under
config/, service/ or net/ includes a protocol's. Files directly in
src/server/ (main.cc, the listener list, the whole configuration) may
include anything. Headers from outside src/server/ are not this test's
business. Usage: server_layers_test.py SRC_SERVER_DIR
"""
import pathlib
import re
import sys

PROTOCOLS = ("http", "grpc", "resp", "thrift")
# What each folder may include, besides headers from outside src/server/.
ALLOWED = {
    "config": {"config"},
    "service": {"config", "service"},
    "net": {"config", "service", "net"},
}
for protocol in PROTOCOLS:
    ALLOWED[protocol] = {"config", "service", "net", protocol}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(path, root):
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else ""


def main():
    root = pathlib.Path(sys.argv[1])
    sources = [p for p in root.rglob("*") if p.suffix in (".h", ".cc")]
    owner = {}
    for path in sources:
        folder = folder_of(path, root)
        if path.suffix == ".h":
            if path.name in owner and owner[path.name] != folder:
                print(f"{path.name} is in both {owner[path.name]}/ and {folder}/: "
                      "header names must be unique under src/server/")
                return 1
            owner[path.name] = folder
    unknown = set(folder_of(p, root) for p in sources) - set(ALLOWED) - {""}
    if unknown:
        print(f"folders with no layer rule: {sorted(unknown)}; add them to this test "
              "and to docs/design.md")
        return 1
    failures = []
    for path in sorted(sources):
        folder = folder_of(path, root)
        if folder == "":
            continue
        for header in INCLUDE.findall(path.read_text(encoding="utf-8")):
            target = owner.get(pathlib.PurePath(header).name)
            if target is None:
                continue  # outside src/server/
            if target not in ALLOWED[folder] or header.startswith(".."):
                failures.append(f"{path.relative_to(root)} includes {header} ({target or 'top'}/)")
    for failure in failures:
        print(failure)
    print(f"{len(sources)} files checked, {len(failures)} includes across layers")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
