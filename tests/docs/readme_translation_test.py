#!/usr/bin/env python3
"""Keeps a translated README in step with README.md.

Usage: readme_translation_test.py README.md README.zh-CN.md

The English README is the reference. The translation passes when:
  - it has the same number of headings at each level (ATX `#` headings
    outside code blocks);
  - it has the same code blocks (fenced or indented), in the same order,
    byte for byte: code, commands and their comments are never translated;
  - every command line of the English shell blocks appears in it.
Each difference is printed on its own line; any difference is exit 1, a
missing file or a bad argument exit 2.
"""

import re
import sys
from collections import Counter

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)")
# A shell command: optional VAR=value prefixes, then a program name or a
# path to one (`./scripts/run.sh`, `deploy/local-cluster.sh`), then a space
# or the end of the line. Rules out routes (`GET /v1/id`), C++ and CMake
# (`#include`, `find_package(`), and directory listings (`include/snowid/`).
COMMAND = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S+\s+)*(?:\./)?[a-z][a-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)*(?:\s|$)")
TRAILING_COMMENT = re.compile(r"\s+#(?:\s.*)?$")


def parse(text):
    """Returns (headings, code blocks) of a Markdown text.

    headings: list of (level, line number); code blocks: list of
    (first line number, text). An indented block starts after a blank line
    (it cannot interrupt a paragraph), spans the lines indented by four
    spaces or a tab and the blank lines between them, and is compared with
    its indentation removed.
    """
    lines = text.split("\n")
    headings, blocks = [], []
    i = 0
    previous_blank = True
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            marker = fence.group(1)
            start = i
            body = []
            i += 1
            while i < len(lines) and not re.match(
                r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$", lines[i]
            ):
                body.append(lines[i])
                i += 1
            blocks.append((start + 1, line.strip() + "\n" + "\n".join(body)))
            i += 1
            previous_blank = False
            continue
        if previous_blank and (line.startswith("    ") or line.startswith("\t")) and line.strip():
            start = i
            body = []
            while i < len(lines) and (
                lines[i].startswith("    ") or lines[i].startswith("\t") or not lines[i].strip()
            ):
                body.append(lines[i][4:] if lines[i].startswith("    ") else lines[i][1:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append((start + 1, "\n".join(body)))
            previous_blank = True
            continue
        heading = HEADING.match(line)
        if heading:
            headings.append((len(heading.group(1)), i + 1))
        previous_blank = not line.strip()
        i += 1
    return headings, blocks


def command_lines(block):
    """The command lines of a code block, without their trailing comments.

    A command line starts with a command (see COMMAND) and is not C++: C++
    blocks (`#include` first) are skipped, and so are lines that assign
    (` = `) or end a statement or a block (`;`, `}`).
    """
    lines = [line.strip() for line in block.split("\n") if line.strip()]
    if not lines or lines[0].startswith("#include"):
        return []
    commands = []
    for line in lines:
        command = TRAILING_COMMENT.sub("", line)
        if not COMMAND.match(command) or " = " in command or command.endswith((";", "}")):
            continue
        commands.append(command)
    return commands


def compare(reference_text, translation_text, reference_name, translation_name):
    """Returns the differences, one message each; empty when in step."""
    problems = []
    ref_headings, ref_blocks = parse(reference_text)
    tr_headings, tr_blocks = parse(translation_text)

    ref_levels = Counter(level for level, _ in ref_headings)
    tr_levels = Counter(level for level, _ in tr_headings)
    for level in sorted(set(ref_levels) | set(tr_levels)):
        if ref_levels[level] != tr_levels[level]:
            problems.append(
                f"level-{level} headings: {ref_levels[level]} in {reference_name}, "
                f"{tr_levels[level]} in {translation_name}"
            )
    ref_order = [level for level, _ in ref_headings]
    tr_order = [level for level, _ in tr_headings]
    if not problems and ref_order != tr_order:
        problems.append(f"headings in another order of levels in {translation_name}")

    if len(ref_blocks) != len(tr_blocks):
        problems.append(
            f"code blocks: {len(ref_blocks)} in {reference_name}, "
            f"{len(tr_blocks)} in {translation_name}"
        )
    for (ref_line, ref_code), (tr_line, tr_code) in zip(ref_blocks, tr_blocks):
        if ref_code != tr_code:
            problems.append(
                f"code block at {reference_name}:{ref_line} differs from "
                f"{translation_name}:{tr_line}"
            )
            break  # after one difference the pairing is off; the first says where

    for ref_line, code in ref_blocks:
        for command in command_lines(code):
            if command not in translation_text:
                problems.append(
                    f"command of {reference_name}:{ref_line} missing from "
                    f"{translation_name}: {command}"
                )
    return problems


def main(argv):
    if len(argv) != 3:
        print("usage: readme_translation_test.py REFERENCE.md TRANSLATION.md", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            reference = f.read()
        with open(argv[2], encoding="utf-8") as f:
            translation = f.read()
    except OSError as error:
        print(f"readme_translation_test: {error}", file=sys.stderr)
        return 2
    _, blocks = parse(reference)
    commands = sum(len(command_lines(code)) for _, code in blocks)
    if not blocks or not commands:
        print(f"readme_translation_test: no code blocks or commands in {argv[1]}", file=sys.stderr)
        return 2
    problems = compare(reference, translation, argv[1], argv[2])
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"{argv[2]} in step with {argv[1]}: {len(blocks)} code blocks, {commands} commands")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
