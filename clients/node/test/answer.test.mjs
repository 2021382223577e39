// The rule a batch is taken by (lib/answer.js) at its edges, without a
// node: what hostile_node.py does not send.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Watermarks, binaryLimit, jsonLimit, parseBinaryBatch, parseJsonBatch } from "../lib/answer.js";
import { jitteredWait, nextBackoff } from "../lib/backoff.js";
import { layoutFromInfo } from "../lib/layout.js";
import { InvalidAnswer } from "../lib/transport.js";

const LARGEST = 2n ** 63n - 1n;
const BINARY = "application/octet-stream";
const body = (ids) => new TextEncoder().encode(JSON.stringify({ ids }));
const text = (json) => new TextEncoder().encode(json);
const refused = (fn) => assert.throws(fn, InvalidAnswer);
// `numbers` (BigInts, taken modulo 2^64) as format=binary carries them.
function binary(numbers) {
  const bytes = new Uint8Array(8 * numbers.length);
  const view = new DataView(bytes.buffer);
  numbers.forEach((n, i) => view.setBigUint64(8 * i, BigInt.asUintN(64, n), true));
  return bytes;
}

describe("parseJsonBatch", () => {
  test("takes 0, the largest ID and fewer than asked", () => {
    assert.deepEqual([...parseJsonBatch(body(["0", "7", String(LARGEST)]), 5)], [0n, 7n, LARGEST]);
  });

  test("ignores members beside ids", () => {
    const answer = text(JSON.stringify({ issuer: "a1", ids: ["5", "6"], next: { hint: 1 } }));
    assert.deepEqual([...parseJsonBatch(answer, 2)], [5n, 6n]);
  });

  test("refuses what BigInt() would read", () => {
    for (const bad of ["1\n", "1,2", "1.0", "1e3", "\u0661", " 1", "0x1", "0b1", "", "-0", "00", String(2n ** 63n)]) {
      refused(() => parseJsonBatch(body(["0", bad]), 5));
    }
  });

  test("refuses what is not an array of 1 to N strings", () => {
    for (const bad of ["", "[]", "{}", "null", JSON.stringify({ ids: [] }), JSON.stringify({ ids: "1" }),
      JSON.stringify({ ids: ["1", "2", "3"] }), "[".repeat(100000), '{"ids":["1"]', JSON.stringify({ ids: [true] }),
      JSON.stringify({ ids: [null] }), JSON.stringify({ ids: [1] })]) {
      refused(() => parseJsonBatch(text(bad), 2));
    }
  });

  test("the largest batch fits its body limit", () => {
    const ids = Array.from({ length: 10000 }, (_, i) => String(LARGEST - 10000n + BigInt(i)));
    assert.ok(body(ids).length <= jsonLimit(10000));
  });
});

describe("parseBinaryBatch", () => {
  test("takes 0, the largest ID and fewer than asked, without copying", () => {
    const bytes = binary([0n, 7n, 2n ** 32n, 2n ** 32n + 1n, LARGEST]);
    const ids = parseBinaryBatch(bytes, BINARY, 6);
    assert.deepEqual([...ids], [0n, 7n, 2n ** 32n, 2n ** 32n + 1n, LARGEST]);
    assert.equal(ids.buffer, bytes.buffer);
    assert.deepEqual([...parseBinaryBatch(binary([5n]), "Application/Octet-Stream; x=1", 1)], [5n]);
  });

  test("refuses another Content-Type", () => {
    for (const type of [undefined, "application/json", "text/plain", "application/octet-streamy"]) {
      refused(() => parseBinaryBatch(binary([1n, 2n]), type, 2));
    }
  });

  test("refuses a length that is not 1 to N numbers of 8 bytes", () => {
    refused(() => parseBinaryBatch(new Uint8Array(0), BINARY, 2));
    refused(() => parseBinaryBatch(binary([1n, 2n]).subarray(0, 13), BINARY, 2));
    refused(() => parseBinaryBatch(binary([1n, 2n, 3n]), BINARY, 2));
    assert.equal(binaryLimit(3), 24);
  });

  test("refuses a number at or above 2^63, and numbers that do not rise", () => {
    for (const bad of [[1n, 2n ** 63n], [1n, 2n ** 64n - 1n], [-1n], [5n, 5n], [5n, 4n], [2n ** 32n, 1n],
      [2n ** 32n + 1n, 2n ** 32n + 1n], [1n, 2n ** 32n, 2n ** 32n - 1n]]) {
      refused(() => parseBinaryBatch(binary(bad), BINARY, 5));
    }
  });

  test("a view at an odd offset is copied, not misread", () => {
    const bytes = new Uint8Array(17);
    bytes.set(binary([3n, 4n]), 1);
    assert.deepEqual([...parseBinaryBatch(bytes.subarray(1), BINARY, 2)], [3n, 4n]);
  });
});

describe("Watermarks", () => {
  test("a batch must start above the last of its issuer and tag", () => {
    const marks = new Watermarks();
    marks.record("", "a1", [10n, 20n]);
    refused(() => marks.check("", "a1", [20n, 30n]));
    marks.check("", "a1", [21n]);
    marks.check("", "b2", [1n]); // another issuer: its own line
    marks.check("orders", "a1", [1n]); // another tag: its own line
    marks.record("", undefined, [50n]);
    refused(() => marks.check("", undefined, [50n])); // without the header: endpoint and tag
  });

  test("remembers the issuers it saw last", () => {
    const marks = new Watermarks();
    marks.record("", "first", [100n]);
    for (let n = 0; n < 64; n++) marks.record("", `other-${n}`, [100n]);
    marks.check("", "first", [1n]); // forgotten: one of 64 newer issuers took its place
    marks.record("", "other-0", [200n]);
    refused(() => marks.check("", "other-0", [150n]));
  });
});

test("layoutFromInfo refuses a layout no node has", () => {
  const layout = { timestamp_bits: 41, datacenter_bits: 5, worker_bits: 5, sequence_bits: 12, time_unit_ms: 1,
    epoch_ms: 1288834974657, sequence_position: "low" };
  assert.equal(layoutFromInfo({ layout }).totalBits, 63);
  for (const bad of [{ timestamp_bits: 1e300 }, { sequence_bits: -1 }, { worker_bits: 6 }, { time_unit_ms: 0 },
    { epoch_ms: 2 ** 60 }, { datacenter_bits: "5" }]) {
    assert.throws(() => layoutFromInfo({ layout: { ...layout, ...bad } }), Error, JSON.stringify(bad));
  }
});

describe("backoff", () => {
  test("doubles from backoffInitialMs up to backoffMaxMs", () => {
    const options = { backoffInitialMs: 100, backoffMaxMs: 700 };
    const seen = [];
    for (let b = 0, i = 0; i < 5; i++) seen.push((b = nextBackoff(b, options)));
    assert.deepEqual(seen, [100, 200, 400, 700, 700]);
  });

  test("each wait is drawn between half and all of the backoff", () => {
    assert.equal(jitteredWait(400, () => 0), 200);
    assert.equal(jitteredWait(400, () => 0.999999), 399.9998);
    const waits = Array.from({ length: 1000 }, () => jitteredWait(400));
    assert.ok(waits.every((w) => w >= 200 && w < 400));
    // Drawn, not fixed: spread over the range.
    assert.ok(Math.min(...waits) < 220 && Math.max(...waits) > 380);
  });
});
