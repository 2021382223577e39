"""Decoding a Snowflake ID under a node's layout, as snowidd's /v1/info
reports it ("layout": bit widths, time unit, epoch, sequence position).

An ID is a non-negative 64-bit integer; from high to low bits:
  0 | timestamp | datacenter | worker | sequence   (sequence_position "low")
  0 | timestamp | sequence | datacenter | worker   (sequence_position "high")
The timestamp counts time units since the epoch. This mirrors the server's
own decode (src/core/decode.cc, src/core/bit_fields.h).

Layout and DecodedId are frozen values; decode() is pure: thread-safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

from .errors import InvalidArgument

_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_WIDTHS = ("timestamp_bits", "datacenter_bits", "worker_bits", "sequence_bits")


@dataclass(frozen=True)
class Layout:
    timestamp_bits: int
    datacenter_bits: int
    worker_bits: int
    sequence_bits: int
    time_unit_ms: int
    epoch_ms: int
    sequence_position: str  # "low" or "high"

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> Layout:
        """The layout in a /v1/info answer; ValueError if it has none, or
        one no node has (a negative bit width or above 63 bits in all, a
        time unit not in 1..2^32 - 1, an epoch before 1970 or past 2^53 ms)."""
        layout = info.get("layout")
        if not isinstance(layout, Mapping):
            raise ValueError("/v1/info has no layout")
        fields = {name: layout.get(name) for name in cls.__dataclass_fields__}
        widths = [fields[k] for k in _WIDTHS]
        if (
            fields["sequence_position"] not in ("low", "high")
            or not all(
                isinstance(v, int) and not isinstance(v, bool)
                for k, v in fields.items()
                if k != "sequence_position"
            )
            or min(widths) < 0
            or sum(widths) > 63
            or not 0 < fields["time_unit_ms"] < 1 << 32
            or not 0 <= fields["epoch_ms"] < 1 << 53
        ):
            raise ValueError(f"/v1/info has a layout this client cannot read: {layout!r:.300}")
        return cls(**fields)  # type: ignore[arg-type]

    @property
    def total_bits(self) -> int:
        return self.timestamp_bits + self.datacenter_bits + self.worker_bits + self.sequence_bits


@dataclass(frozen=True)
class DecodedId:
    id: int
    timestamp_ms: int  # Unix ms of the start of the ID's time unit
    datacenter: int
    worker: int
    sequence: int

    @property
    def time(self) -> datetime:
        """timestamp_ms as an aware UTC datetime."""
        return _UNIX_EPOCH + timedelta(milliseconds=self.timestamp_ms)


def _field(bits: int, shift: int, width: int) -> int:
    return (bits >> shift) & ((1 << width) - 1)


def decode(layout: Layout, id: int) -> DecodedId:
    """The fields of `id` under `layout`; InvalidArgument if the ID is
    negative or has bits above the layout's total."""
    if isinstance(id, bool) or not isinstance(id, int):
        raise InvalidArgument(f"ID {id!r} is not an int")
    if id < 0:
        raise InvalidArgument(f"ID {id} is negative")
    if id >> layout.total_bits:
        raise InvalidArgument(f"ID {id} has bits above the layout's {layout.total_bits} bits")
    if layout.sequence_position == "low":
        sequence_shift = 0
        worker_shift = layout.sequence_bits
        datacenter_shift = worker_shift + layout.worker_bits
        timestamp_shift = datacenter_shift + layout.datacenter_bits
    else:
        worker_shift = 0
        datacenter_shift = layout.worker_bits
        sequence_shift = datacenter_shift + layout.datacenter_bits
        timestamp_shift = sequence_shift + layout.sequence_bits
    units = _field(id, timestamp_shift, layout.timestamp_bits)
    return DecodedId(
        id=id,
        timestamp_ms=layout.epoch_ms + layout.time_unit_ms * units,
        datacenter=_field(id, datacenter_shift, layout.datacenter_bits),
        worker=_field(id, worker_shift, layout.worker_bits),
        sequence=_field(id, sequence_shift, layout.sequence_bits),
    )
