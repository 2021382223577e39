"use strict";
// A node's ID layout, as GET /v1/info reports it, and decode() under it.
//
// The field order is snowid's (src/core/bit_fields.h):
//   sequence "low":  sign | timestamp | datacenter | worker | sequence
//   sequence "high": sign | timestamp | sequence | datacenter | worker
// The timestamp counts time units (timeUnitMs) since the epoch (epochMs).
// All arithmetic on IDs is BigInt: an ID is never a Number. Pure functions.
const { invalidArgument } = require("./errors.js");

const mask = (bits) => (1n << BigInt(bits)) - 1n;

// A Layout from the JSON of GET /v1/info (its "layout" object). Throws for
// one no node has: bit widths not in 0..63 or above 63 in all, a time unit
// not in 1..2^32 - 1, an epoch before 1970 or past 2^53 ms.
function layoutFromInfo(info) {
  const l = info && info.layout;
  const fields = ["timestamp_bits", "datacenter_bits", "worker_bits", "sequence_bits"];
  const widths = l ? fields.map((f) => l[f]) : [];
  const unit = l ? l.time_unit_ms ?? 1 : 1;
  if (
    !l ||
    !widths.every((w) => Number.isInteger(w) && w >= 0) ||
    widths.reduce((a, b) => a + b, 0) > 63 ||
    !(Number.isInteger(unit) && unit > 0 && unit < 2 ** 32) ||
    !(Number.isSafeInteger(l.epoch_ms) && l.epoch_ms >= 0)
  ) {
    throw new Error("/v1/info has no layout with bit widths (63 bits in all at most), a time unit and epoch_ms");
  }
  const high = l.sequence_position === "high";
  const sequenceShift = high ? l.datacenter_bits + l.worker_bits : 0;
  const workerShift = high ? 0 : l.sequence_bits;
  const datacenterShift = high ? l.worker_bits : l.sequence_bits + l.worker_bits;
  const timestampShift = l.sequence_bits + l.worker_bits + l.datacenter_bits;
  return Object.freeze({
    timestampBits: l.timestamp_bits,
    datacenterBits: l.datacenter_bits,
    workerBits: l.worker_bits,
    sequenceBits: l.sequence_bits,
    timeUnitMs: unit,
    epochMs: l.epoch_ms,
    sequencePosition: high ? "high" : "low",
    totalBits: timestampShift + l.timestamp_bits,
    shifts: { timestampShift, datacenterShift, workerShift, sequenceShift },
  });
}

// The fields of `id` (a BigInt, or a string of decimal digits) under
// `layout`: { id, timestampMs, time (a Date), datacenter, worker, sequence }.
// Throws invalid_argument for a negative ID or one with bits above the layout.
function decodeId(layout, id) {
  const value = typeof id === "bigint" ? id : parseId(id);
  if (value < 0n) throw invalidArgument(`ID ${value} is negative`);
  if (value >> BigInt(layout.totalBits) !== 0n) {
    throw invalidArgument(`ID ${value} has bits above the layout's ${layout.totalBits} bits`);
  }
  const s = layout.shifts;
  const field = (shift, bits) => Number((value >> BigInt(shift)) & mask(bits));
  const units = field(s.timestampShift, layout.timestampBits);
  const timestampMs = layout.epochMs + units * layout.timeUnitMs;
  return {
    id: value,
    timestampMs,
    time: new Date(timestampMs),
    datacenter: field(s.datacenterShift, layout.datacenterBits),
    worker: field(s.workerShift, layout.workerBits),
    sequence: field(s.sequenceShift, layout.sequenceBits),
  };
}

function parseId(text) {
  if (typeof text !== "string" || !/^[0-9]{1,20}$/.test(text)) {
    throw invalidArgument(`'${text}' is not an ID (a BigInt or decimal digits)`);
  }
  return BigInt(text);
}

module.exports = { layoutFromInfo, decodeId };
