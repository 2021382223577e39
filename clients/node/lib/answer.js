"use strict";
// What the client takes from a node: the rule of docs/clients.md, "What a
// client accepts", for answers to GET /v1/ids and GET /v1/segment/{tag},
// in binary (format=binary) and in JSON.
//
// A batch of N asked for is taken only if
//   - binary: its Content-Type is application/octet-stream and its body 1
//     to N numbers of 8 bytes, little-endian, each below 2^63 (the sign bit
//     clear), at most binaryLimit(N) bytes;
//   - JSON: its body is at most jsonLimit(N) bytes, one JSON object whose
//     "ids" is an array of 1 to N JSON strings, each plain ASCII decimal
//     digits (no sign, space, leading zero but "0" itself, underscore or
//     other digits) below 2^63; members beside "ids" are ignored;
// and in both, the numbers are strictly increasing and the first is above
// the last of the batch before with the same Snowid-Issuer from the same
// endpoint and tag (Watermarks). transport.js stops reading at the limit.
// Anything else is refused whole (an InvalidAnswer): the client discards
// the batch and counts it. BigInt() alone would take "0x10", " 12 " and ""
// (as 0n): the pattern is checked first.
//
// A batch is a BigInt64Array: a binary answer is viewed in place (no copy,
// no BigInt made until an ID is taken), a JSON one is copied into one.
// parseBinaryBatch() and parseJsonBatch() are pure; a Watermarks belongs to
// one endpoint of one client.
const { InvalidAnswer } = require("./transport.js");

// Plain decimal digits, at most 19 (2^63 has 19; the value is checked too).
const DECIMAL = /^(?:0|[1-9][0-9]{0,18})$/;
const ID_LIMIT = 2n ** 63n;
const BINARY_TYPE = "application/octet-stream";
// Whether this machine's typed arrays are little-endian, as the wire is.
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
// Issuers remembered per tag and endpoint: a proxy fronts a few nodes, a
// node that draws a new token per answer does not fill the memory.
const ISSUERS_KEPT = 64;

// The most bytes a JSON answer of `count` IDs can take: each ID at most 19
// digits, two quotes and a comma, padded to 24; 64 for the rest.
function jsonLimit(count) {
  return count * 24 + 64;
}

// The most bytes a binary answer of `count` IDs can take.
function binaryLimit(count) {
  return count * 8;
}

// The IDs of a binary answer to a request for `count`: `bytes` (a
// Uint8Array) viewed as a BigInt64Array, after its `contentType` and every
// number were checked; throws an InvalidAnswer saying what is wrong.
function parseBinaryBatch(bytes, contentType, count) {
  const type = String(contentType ?? "").split(";")[0].trim().toLowerCase();
  if (type !== BINARY_TYPE) {
    throw new InvalidAnswer(`a binary request answered with Content-Type '${contentType}'`);
  }
  const n = bytes.length / 8;
  if (!Number.isInteger(n) || n < 1 || n > count) {
    throw new InvalidAnswer(`a binary answer of ${bytes.length} bytes is not 1 to ${count} numbers of 8 bytes`);
  }
  let buffer = bytes.buffer;
  let offset = bytes.byteOffset;
  if (offset % 8 !== 0 || !LITTLE_ENDIAN) {
    const copy = new Uint8Array(bytes); // at offset 0 of its own memory: aligned
    if (!LITTLE_ENDIAN) Buffer.from(copy.buffer).swap64();
    [buffer, offset] = [copy.buffer, 0];
  }
  // Each number as two 32-bit halves, compared as Numbers: no BigInt made.
  const words = new Int32Array(buffer, offset, 2 * n);
  let highBefore = -1;
  let lowBefore = 0;
  for (let i = 0; i < 2 * n; i += 2) {
    const low = words[i] >>> 0;
    const high = words[i + 1];
    if (high < 0 || high < highBefore || (high === highBefore && low <= lowBefore)) {
      const ids = new BigInt64Array(buffer, offset, n);
      const at = i / 2;
      if (high < 0) throw new InvalidAnswer(`number ${BigInt.asUintN(64, ids[at])} is not below 2^63`);
      throw new InvalidAnswer(`number ${ids[at]} is not above the number before it, ${ids[at - 1]}`);
    }
    highBefore = high;
    lowBefore = low;
  }
  return new BigInt64Array(buffer, offset, n);
}

// The IDs of the JSON answer `bytes` to a request for `count`; throws an
// InvalidAnswer saying what is wrong.
function parseJsonBatch(bytes, count) {
  let body;
  try {
    body = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("utf8"));
  } catch {
    throw new InvalidAnswer("the answer is not JSON");
  }
  const texts = body !== null && typeof body === "object" ? body.ids : undefined;
  if (!Array.isArray(texts) || texts.length === 0 || texts.length > count) {
    throw new InvalidAnswer(`the answer holds no array of 1 to ${count} IDs`);
  }
  const ids = new BigInt64Array(texts.length);
  let last = -1n;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i];
    if (typeof text !== "string" || !DECIMAL.test(text)) {
      throw new InvalidAnswer(`ID ${JSON.stringify(text)} is not a string of plain decimal digits`);
    }
    const id = BigInt(text);
    if (id <= last) throw new InvalidAnswer(`ID ${id} is not above the ID before it, ${last}`);
    if (id >= ID_LIMIT) throw new InvalidAnswer(`ID ${id} is not below 2^63`);
    ids[i] = last = id;
  }
  return ids;
}

// The last ID taken per tag and issuer from one endpoint; issuer undefined
// for answers without a Snowid-Issuer header.
class Watermarks {
  #last = new Map(); // tag -> Map(issuer -> BigInt), oldest issuer first

  // Throws an InvalidAnswer if `ids` does not start above the issuer's last batch.
  check(tag, issuer, ids) {
    const last = this.#last.get(tag)?.get(issuer);
    if (last !== undefined && ids[0] <= last) {
      throw new InvalidAnswer(
        `the batch starts at ${ids[0]}, not above ${last}, the last ID of the batch before from issuer ${issuer}`,
      );
    }
  }

  // Remembers the last ID of a batch taken.
  record(tag, issuer, ids) {
    let marks = this.#last.get(tag);
    if (marks === undefined) this.#last.set(tag, (marks = new Map()));
    marks.delete(issuer);
    marks.set(issuer, ids[ids.length - 1]);
    if (marks.size > ISSUERS_KEPT) marks.delete(marks.keys().next().value);
  }
}

module.exports = { Watermarks, binaryLimit, jsonLimit, parseBinaryBatch, parseJsonBatch };
