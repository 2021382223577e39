#!/usr/bin/env python3
"""Checks that the documentation's relative links lead somewhere.

Usage: link_check_test.py REPOSITORY_ROOT

Reads README.md, README.zh-CN.md and every docs/*.md under the root. Every
relative link in them, inline (`[text](target)`) or by reference
(`[name]: target`), outside code blocks and code spans, must name a file or
directory that exists; a link with an anchor (`page.md#heading`, or
`#heading` within the same page) must name a heading of that Markdown page,
as GitHub spells heading anchors. Links with a scheme (https:, mailto:) are
not followed. Each broken link is printed on its own line as FILE:LINE;
any broken link is exit 1, no files or no links at all exit 2.
"""

import os
import re
import sys
from collections import Counter

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text):
    """Yields (line number, line) of the lines outside code blocks.

    An indented code block starts after a blank line and goes on over
    indented and blank lines, as in readme_translation_test.py.
    """
    fence = None
    previous_blank = True
    in_indented_block = False
    for number, line in enumerate(text.split("\n"), start=1):
        if fence:
            if re.match(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$", line):
                fence = None
            continue
        opening = FENCE.match(line)
        if opening:
            fence = opening.group(1)
            previous_blank = False
            continue
        blank = not line.strip()
        indented = line.startswith(("    ", "\t"))
        if not blank and indented and (previous_blank or in_indented_block):
            in_indented_block = True
            previous_blank = False
            continue
        if not blank:
            in_indented_block = False
        previous_blank = blank
        yield number, line


def slug(heading):
    """GitHub's anchor for a heading's text (before numbering duplicates)."""
    text = CODE_SPAN.sub(lambda m: m.group(2), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    text = re.sub(r"[*_]{1,2}([^*_]+)[*_]{1,2}", r"\1", text)  # emphasis
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """The anchors of a Markdown text's headings, duplicates numbered."""
    seen = Counter()
    result = set()
    for _, line in prose_lines(text):
        heading = HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(1))
        result.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return result


def links(text):
    """Yields (line number, target) of every link in a Markdown text's prose."""
    for number, line in prose_lines(text):
        reference = REFERENCE.match(line)
        if reference:
            yield number, reference.group(1)
            continue
        prose = CODE_SPAN.sub("", line)
        for match in INLINE_LINK.finditer(prose):
            yield number, match.group(1)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def check(root, page):
    """Returns (problems, links checked) of one page, a path under root."""
    problems = []
    count = 0
    path = os.path.join(root, page)
    for number, target in links(read(path)):
        if SCHEME.match(target):
            continue
        count += 1
        where = f"{page}:{number}: {target}"
        file_part, _, anchor = target.partition("#")
        resolved = path if not file_part else os.path.normpath(
            os.path.join(os.path.dirname(path), file_part))
        if not os.path.exists(resolved):
            problems.append(f"{where}: no such file or directory")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(read(resolved)):
            problems.append(f"{where}: no heading with that anchor")
    return problems, count


def main(argv):
    if len(argv) != 2:
        print("usage: link_check_test.py REPOSITORY_ROOT", file=sys.stderr)
        return 2
    root = argv[1]
    pages = [name for name in ("README.md", "README.zh-CN.md")
             if os.path.isfile(os.path.join(root, name))]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        pages += sorted(os.path.join("docs", name) for name in os.listdir(docs)
                        if name.endswith(".md"))
    problems, total = [], 0
    for page in pages:
        found, count = check(root, page)
        problems += found
        total += count
    if not pages or not total:
        print(f"link_check_test: no pages or no relative links under {root}", file=sys.stderr)
        return 2
    print("\n".join(problems) or f"{total} relative links in {len(pages)} pages resolve")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
