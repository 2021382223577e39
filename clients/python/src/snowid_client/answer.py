"""What the client takes from a node: the rule of docs/clients.md, "What a
client accepts", for answers to GET /v1/ids and GET /v1/segment/{tag}.

In binary (format=binary, asked for first), a batch of N is taken only if
its length is a multiple of 8 and at most 8 * N bytes, each 8 bytes a
little-endian 64-bit integer below 2^63 (its sign bit clear), strictly
increasing (parse_binary). Its Content-Type is node.py's to check.

In JSON (from a node from before format=binary), a batch of N is taken only
if its body is at most body_limit(N) bytes, one JSON object whose "ids" is
an array of 1 to N JSON strings, each plain ASCII decimal digits (no sign,
space, leading zero but "0" itself, underscore or other digits) below 2^63,
strictly increasing (parse_batch); members of the object beside "ids" are
ignored (a later node may add some).

Either way the first ID must lie above the last ID of the batch before with
the same Snowid-Issuer from the same endpoint and tag (Watermarks).
Anything else is refused whole: the caller discards the batch and counts it. int() alone would take " 12 ",
"+12", "1_000" and Arabic-Indic digits, json floats and negatives: the
pattern is checked first.

Business IDs (GET /v1/business/{tag}?count=N, always in JSON) are taken
only if the body is at most business_body_limit(N, tag) bytes, one JSON
object of exactly two members, "tag" (the tag asked for) and "ids", an
array of exactly N strings, each 1 to 256 bytes of UTF-8 without control
characters, no two alike (parse_business). Their Content-Type is node.py's
to check.

parse_binary(), parse_batch() and parse_business() are pure; a Watermarks belongs to one endpoint and is used by
one thread (the refill thread).
"""

from __future__ import annotations

import json
import operator
import re
import struct
from collections import OrderedDict
from itertools import islice

# Plain decimal digits, at most 19 (2^63 has 19; the value is checked too).
_DECIMAL = r"(?:0|[1-9][0-9]{0,18})"
_ONE_ID = re.compile(_DECIMAL)
# A batch's IDs joined by commas, checked in one match: a comma within an
# ID fails it as surely as any other character, since then the number of
# commas is off.
_JOINED_IDS = re.compile(f"{_DECIMAL}(?:,{_DECIMAL})*")
_ID_LIMIT = 1 << 63
# Issuers remembered per tag and endpoint: a proxy fronts a few nodes, a
# node that draws a new token per answer does not fill the memory.
_ISSUERS_KEPT = 64
# The longest business ID, in bytes of UTF-8, and the control characters
# none may hold (C0, DEL and C1).
BUSINESS_ID_LIMIT = 256
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def body_limit(count: int, binary: bool = False) -> int:
    """The most bytes an answer of `count` IDs can take: in binary 8 an ID;
    in JSON each ID at most 19 digits, two quotes and a comma, padded to 24,
    and 64 for the rest."""
    return count * 8 if binary else count * 24 + 64


def parse_binary(body: bytes, count: int) -> list[int]:
    """The IDs of a binary answer to a request for `count`, strictly
    increasing and below 2^63; ValueError saying what is wrong otherwise."""
    size = len(body)
    if size == 0 or size % 8 or size > 8 * count:
        raise ValueError(f"a binary answer of {size} bytes, not 8 to {8 * count} in steps of 8")
    # Signed: an ID with the sign bit set (2^63 or above) reads negative.
    ids = list(struct.unpack(f"<{size // 8}q", body))
    _check_rising(ids)
    if ids[0] < 0:  # rising from a non-negative first: all are
        raise ValueError(f"ID {ids[0] % (1 << 64)} is not below 2^63")
    return ids


def _check_rising(ids: list[int]) -> None:
    # One C-level pass (about 25 ns an ID); the loop below only names the pair.
    if not all(map(operator.lt, ids, islice(ids, 1, None))):
        for before, after in zip(ids, islice(ids, 1, None)):
            if after <= before:
                raise ValueError(
                    f"ID {after % (1 << 64)} is not above the ID before it, {before % (1 << 64)}"
                )


def parse_batch(body: bytes, count: int) -> list[int]:
    """The IDs of an answer to a request for `count`, strictly increasing;
    ValueError saying what is wrong otherwise."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise ValueError("the answer is not JSON") from None
    texts = answer.get("ids") if isinstance(answer, dict) else None
    if not isinstance(texts, list) or not 1 <= len(texts) <= count:
        raise ValueError(f"the answer holds no array of 1 to {count} IDs")
    # A batch of 10,000 in one match, not 10,000: as fast as int() alone.
    if not all(type(text) is str for text in texts) or not _all_decimal(texts):
        bad = next(t for t in texts if not (isinstance(t, str) and _ONE_ID.fullmatch(t)))
        raise ValueError(f"ID {bad!r} is not a string of plain decimal digits")
    ids = list(map(int, texts))
    _check_rising(ids)
    if ids[-1] >= _ID_LIMIT:
        raise ValueError(f"ID {ids[-1]} is not below 2^63")
    return ids


def _all_decimal(texts: list[str]) -> bool:
    joined = ",".join(texts)
    return _JOINED_IDS.fullmatch(joined) is not None and joined.count(",") == len(texts) - 1


def business_body_limit(count: int, tag: str) -> int:
    """The most bytes an answer of `count` business IDs of `tag` can take:
    each ID at most 256 bytes, each escaped as \\uXXXX at worst (6 bytes),
    with its quotes and comma; the tag likewise; 64 for the rest."""
    return count * (6 * BUSINESS_ID_LIMIT + 3) + 6 * len(tag.encode("utf-8")) + 64


def parse_business(body: bytes, tag: str, count: int) -> list[str]:
    """The business IDs of an answer to a request for `count` of `tag`;
    ValueError saying what is wrong otherwise."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        raise ValueError("the answer is not JSON") from None
    if not isinstance(answer, dict) or set(answer) != {"tag", "ids"}:
        raise ValueError('the answer is not a JSON object of "tag" and "ids" alone')
    if answer["tag"] != tag:
        raise ValueError(f"the answer is for tag {answer['tag']!r}, not {tag!r}")
    ids = answer["ids"]
    if not isinstance(ids, list) or len(ids) != count:
        raise ValueError(f"the answer holds no array of exactly {count} IDs")
    for id_ in ids:
        if type(id_) is not str or not id_:
            raise ValueError(f"ID {id_!r} is not a non-empty string")
        try:
            size = len(id_.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate ("\\ud800")
            raise ValueError(f"ID {id_!r} is not valid Unicode") from None
        if size > BUSINESS_ID_LIMIT:
            raise ValueError(f"ID {id_[:32]!r}... is {size} bytes, above {BUSINESS_ID_LIMIT}")
        if _CONTROL.search(id_):
            raise ValueError(f"ID {id_!r} holds a control character")
    if len(set(ids)) != count:
        seen: set[str] = set()
        repeated = next(i for i in ids if i in seen or seen.add(i))  # type: ignore[func-returns-value]
        raise ValueError(f"ID {repeated!r} appears twice in the batch")
    return ids


class Watermarks:
    """The last ID taken per (tag, issuer) from one endpoint; issuer None
    for answers without a Snowid-Issuer header."""

    def __init__(self) -> None:
        self._last: dict[str, OrderedDict[str | None, int]] = {}

    def check(self, tag: str, issuer: str | None, ids: list[int]) -> None:
        """ValueError if `ids` does not start above the issuer's last batch."""
        last = self._last.get(tag, {}).get(issuer)
        if last is not None and ids[0] <= last:
            raise ValueError(
                f"the batch starts at {ids[0]}, not above {last}, the last ID of the "
                f"batch before from issuer {issuer!r}"
            )

    def record(self, tag: str, issuer: str | None, ids: list[int]) -> None:
        """Remembers the last ID of a batch taken."""
        marks = self._last.setdefault(tag, OrderedDict())
        marks[issuer] = ids[-1]
        marks.move_to_end(issuer)
        if len(marks) > _ISSUERS_KEPT:
            marks.popitem(last=False)
