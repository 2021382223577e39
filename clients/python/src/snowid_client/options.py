"""Options of a Client, their defaults and their validation.

Names and defaults are docs/clients.md's options table, spelled as the C++
client's ClientOptions (include/snowid/client.h). Durations are seconds as
int or float. max_batch defaults to 10000, snowidd's default limit for one
HTTP request; a node's own limit (its /v1/info "max_batch") caps each
request further (a refill of more takes several requests).

Options is a frozen value: safe to share between threads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import urlsplit

from .errors import InvalidArgument

# The largest batch the client asks for, whatever a node allows.
MAX_BATCH_LIMIT = 1_000_000

# The longest duration an option takes (2^31 - 1 ms, about 24.8 days, as
# the Node.js client): longer ones overflow the waits of threading and
# select at the first call.
MAX_SECONDS = (2**31 - 1) / 1000

_AGENT = re.compile(r"[a-zA-Z][a-zA-Z0-9-]{0,63}")


@dataclass(frozen=True)
class Options:
    """What Client(...) takes; see the class docstring of Client."""

    endpoints: tuple[str, ...]
    bearer_token: str = ""
    agent: str = ""
    call_deadline: float = 0.5
    empty_wait: float = 0.2
    start_wait: float = 2.0
    low_water: float = 0.5
    initial_batch: int = 1000
    max_batch: int = 10_000
    refill_period: float = 0.5
    max_age: float = 10.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """(host, port) of a base URL "http://HOST[:PORT]" ("[IPV6]" for an IPv6
    host; port 80 when left out). Raises InvalidArgument naming it."""
    bad = InvalidArgument(f"endpoints: {endpoint!r} is not a base URL like http://127.0.0.1:8080")
    if not isinstance(endpoint, str):
        raise bad
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        raise bad from None
    if (
        parts.scheme != "http"
        or not parts.hostname
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or parts.username is not None
        or any(c.isspace() for c in endpoint)
    ):
        raise bad
    return parts.hostname, port if port is not None else 80


def _seconds(name: str, value: object, minimum: float, inclusive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgument(f"{name}: {value!r} is not a number of seconds")
    seconds = float(value)
    low_ok = seconds >= minimum if inclusive else seconds > minimum
    if not (low_ok and seconds <= MAX_SECONDS):
        relation = "at least" if inclusive else "above"
        raise InvalidArgument(
            f"{name}: {value!r} s must be {relation} {minimum} s and at most {MAX_SECONDS} s"
        )
    return seconds


def _count(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(f"{name}: {value!r} is not an integer in [{low}, {high}]")
    return value


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{name}: {value!r} is not a string")
    return value


def make_options(endpoints: Sequence[str], **given: object) -> Options:
    """Validated Options; InvalidArgument naming the first bad option."""
    if isinstance(endpoints, str) or not endpoints:
        raise InvalidArgument("endpoints: a non-empty list of base URLs is needed")
    for endpoint in endpoints:
        split_endpoint(endpoint)
    unknown = set(given) - set(Options.__dataclass_fields__) - {"endpoints"}
    if unknown:
        raise InvalidArgument(f"unknown option {sorted(unknown)[0]!r}")
    options = Options(endpoints=tuple(endpoints), **given)  # type: ignore[arg-type]
    token = _text("bearer_token", options.bearer_token)
    if not all(" " <= c <= "~" for c in token):
        raise InvalidArgument("bearer_token: only printable ASCII characters")
    agent = _text("agent", options.agent)
    if agent and not _AGENT.fullmatch(agent):
        raise InvalidArgument(
            f"agent: {agent!r} is not [a-zA-Z][a-zA-Z0-9-]* of at most 64 characters"
        )
    fields = {
        "call_deadline": _seconds("call_deadline", options.call_deadline, 0.0, False),
        "empty_wait": _seconds("empty_wait", options.empty_wait, 0.0, True),
        "start_wait": _seconds("start_wait", options.start_wait, 0.0, True),
        "refill_period": _seconds("refill_period", options.refill_period, 0.0, False),
        "max_age": _seconds("max_age", options.max_age, 0.01, True),
        "backoff_initial": _seconds("backoff_initial", options.backoff_initial, 0.0, False),
    }
    fields["backoff_max"] = _seconds(
        "backoff_max", options.backoff_max, fields["backoff_initial"], True
    )
    low_water = options.low_water
    if isinstance(low_water, bool) or not isinstance(low_water, (int, float)) or not (
        0.0 < low_water <= 1.0
    ):
        raise InvalidArgument(f"low_water: {low_water!r} is not in (0, 1]")
    initial = _count("initial_batch", options.initial_batch, 1, MAX_BATCH_LIMIT)
    _count("max_batch", options.max_batch, initial, MAX_BATCH_LIMIT)
    return Options(
        endpoints=options.endpoints,
        bearer_token=token,
        agent=agent,
        low_water=float(low_water),
        initial_batch=initial,
        max_batch=options.max_batch,
        **fields,
    )


def check_tag(tag: object) -> None:
    """InvalidArgument unless `tag` could name a segment tag (the nodes
    judge the rest): 1 to 128 printable characters."""
    if not isinstance(tag, str) or not tag or len(tag) > 128 or not tag.isprintable():
        raise InvalidArgument(
            f"tag: {tag!r} is not a segment tag (1 to 128 printable characters)"
        )
