#!/usr/bin/env python3
"""Fails when a function body in src/ is longer than 80 lines.

A function fits a screen (about 60 lines, never above 80): an orchestrator is
a few named steps. This check finds every function body in src/**/*.cc and
src/**/*.h and lists those longer than MAX_LINES.

How a body is found (a heuristic, not a C++ parser): braces are matched after
comments, string literals (raw ones too) and character literals are blanked
out. A '{' opens a function body when the text before it ends with ')',
optionally followed by const, noexcept, override, final, mutable, '-> type' or
a constructor's member-initializer list; a lambda's body is found the same
way (its parameter list or its capture list ends in ')' or ']'). Namespaces,
classes, structs, enums and initializer tables are not functions. A lambda
inside a function counts toward that function, and is measured on its own too.

A body's length is the number of lines from the line of its '{' to the line
of its '}', both included.

Usage: function_length_test.py SOURCE_ROOT   (the directory holding src/)
"""

import bisect
import pathlib
import re
import sys

MAX_LINES = 80

# Functions known to be too long, each "path:name" as this script prints it.
# Empty: every function in src/ fits a screen. Never grow it.
KNOWN_TOO_LONG = frozenset()

_CONTROL_WORDS = {"if", "for", "while", "switch", "catch", "sizeof", "alignof", "decltype",
                  "return", "static_assert", "noexcept", "requires", "alignas"}


def blank_literals_and_comments(text):
    """The text with comments, strings and char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif text.startswith('R"', i) and re.match(r'(^|[^\w]|[^\w](u8|u|U|L))$',
                                                   text[max(0, i - 3):i]):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            end = n if end < 0 else end + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            # A digit separator (1'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() \
                    and re.match(r"[0-9a-fA-FxXbB']", text[i - 1]) and _in_number(text, i):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _in_number(text, i):
    """Whether the quote at i sits inside a numeric literal such as 1'000'000."""
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'."):
        j -= 1
    return text[j + 1].isdigit()


def _matching_open(code, close_at, open_char, close_char):
    depth = 0
    for k in range(close_at, -1, -1):
        if code[k] == close_char:
            depth += 1
        elif code[k] == open_char:
            depth -= 1
            if depth == 0:
                return k
    return -1


_TRAILING_WORDS = ("const", "noexcept", "override", "final", "mutable", "volatile", "&&", "&")


def _strip_trailing_words(head):
    """`head` without trailing const, noexcept, override, ... qualifiers."""
    while True:
        head = head.rstrip()
        for word in _TRAILING_WORDS:
            if head.endswith(word) and (not word[0].isalpha() or len(head) == len(word)
                                        or not (head[-len(word) - 1].isalnum()
                                                or head[-len(word) - 1] == "_")):
                head = head[:-len(word)]
                break
        else:
            return head


def _tail_match(pattern, text):
    """re.search of an end-anchored `pattern` on the last 300 characters of `text`."""
    return re.search(pattern, text[-300:])


def function_name(code, brace):
    """The function's name if the '{' at `brace` opens a function body, else None."""
    # A function's head (its signature and any initializer list) is shorter
    # than this; looking no further back keeps the scan linear.
    head = code[max(0, brace - 4000):brace].rstrip()
    # Drop a trailing-return type "-> type".
    arrow = head.rfind("->")
    if arrow >= 0 and re.fullmatch(r"->\s*[\w:<>,\s\*&]+", head[arrow:]):
        head = head[:arrow].rstrip()
    head = _strip_trailing_words(head)
    # noexcept(expr)
    if head.endswith(")"):
        open_at = _matching_open(head, len(head) - 1, "(", ")")
        before = head[:open_at].rstrip()
        if before.endswith("noexcept"):
            head = before[:-len("noexcept")].rstrip()
    # A constructor's member-initializer list: ") : a_(x), b_{y}".
    init = _strip_initializer_list(head)
    if init is not None:
        head = init
    if head.endswith("]"):  # a lambda without a parameter list: [&] { ... }
        return "lambda"
    if not head.endswith(")"):
        return None
    open_at = _matching_open(head, len(head) - 1, "(", ")")
    if open_at < 0:
        return None
    before = head[:open_at].rstrip()
    if before.endswith("]"):
        return "lambda"
    match = _tail_match(r"([~\w:]+(?:<[^<>]*>)?|operator\s*[^\s\w]+)\s*$", before)
    if not match:
        return None
    name = match.group(1)
    if name.split("::")[-1] in _CONTROL_WORDS or name in _CONTROL_WORDS:
        return None
    # A braced initializer after a call, as in `T x = make(a) {`, does not occur in C++.
    return re.sub(r"\s+", "", name)


def _strip_initializer_list(head):
    """`head` without a trailing constructor initializer list, or None if it has none."""
    end = len(head)
    k = end - 1
    seen_item = False
    while k >= 0:
        while k >= 0 and head[k].isspace():
            k -= 1
        if k < 0 or head[k] not in ")}":
            return None
        open_char = "(" if head[k] == ")" else "{"
        open_at = _matching_open(head, k, open_char, head[k])
        if open_at < 0:
            return None
        m = _tail_match(r"[\w:<>]+\s*$", head[:open_at])
        if not m:
            return None
        k = open_at - (len(head[:open_at][-300:]) - m.start()) - 1
        while k >= 0 and head[k].isspace():
            k -= 1
        seen_item = True
        if k >= 0 and head[k] == ",":
            k -= 1
            continue
        if k >= 0 and head[k] == ":" and (k == 0 or head[k - 1] != ":") and seen_item:
            rest = head[:k].rstrip()
            return rest if rest.endswith(")") else None
        return None
    return None


def function_bodies(text):
    """(name, first line, line count) of every function body in `text`."""
    code = blank_literals_and_comments(text)
    newlines = [i for i, c in enumerate(code) if c == "\n"]
    found = []
    stack = []
    for i, c in enumerate(code):
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            start = stack.pop()
            name = function_name(code, start)
            if name is None:
                continue
            first = bisect.bisect_left(newlines, start) + 1
            last = bisect.bisect_left(newlines, i) + 1
            found.append((name, first, last - first + 1))
    return found


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = pathlib.Path(argv[1])
    offenders = []
    measured = 0
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in (".cc", ".h") or not path.is_file():
            continue
        relative = path.relative_to(root).as_posix()
        for name, line, length in function_bodies(path.read_text(errors="replace")):
            measured += 1
            if length > MAX_LINES:
                offenders.append((f"{relative}:{name}", line, length))
    if measured < 100:  # the heuristic has stopped seeing functions: that is a failure too
        print(f"FAIL: only {measured} function bodies found under {root / 'src'}")
        return 1
    new = [o for o in offenders if o[0] not in KNOWN_TOO_LONG]
    for key, line, length in offenders:
        known = " (known, to be split)" if key in KNOWN_TOO_LONG else ""
        print(f"{key} at line {line}: {length} lines{known}")
    stale = KNOWN_TOO_LONG - {o[0] for o in offenders}
    for key in sorted(stale):
        print(f"{key}: listed in KNOWN_TOO_LONG but no longer too long: remove it from the list")
    if new or stale:
        print(f"FAIL: {len(new)} function(s) above {MAX_LINES} lines, {len(stale)} stale entries")
        return 1
    print(f"OK: {measured} function bodies, none new above {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
