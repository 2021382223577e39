// The rule a batch is taken by (lib/answer.js) at its edges, without a
// node: what hostile_node.py does not send.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Watermarks, bodyLimit, parseBatch } from "../lib/answer.js";
import { layoutFromInfo } from "../lib/layout.js";
import { InvalidAnswer } from "../lib/transport.js";

const LARGEST = 2n ** 63n - 1n;
const body = (ids) => JSON.stringify({ ids });
const refused = (fn) => assert.throws(fn, InvalidAnswer);

describe("parseBatch", () => {
  test("takes 0, the largest ID and fewer than asked", () => {
    assert.deepEqual(parseBatch(body(["0", "7", String(LARGEST)]), 5), [0n, 7n, LARGEST]);
  });

  test("refuses what BigInt() would read", () => {
    for (const bad of ["1\n", "1,2", "1.0", "1e3", "\u0661", " 1", "0x1", "0b1", "", "-0", "00", String(2n ** 63n)]) {
      refused(() => parseBatch(body(["0", bad]), 5));
    }
  });

  test("refuses what is not an array of 1 to N strings", () => {
    for (const bad of ["", "[]", "{}", "null", body([]), body("1"), body(["1", "2", "3"]), "[".repeat(100000),
      '{"ids":["1"]', body([true]), body([null]), body([1])]) {
      refused(() => parseBatch(bad, 2));
    }
  });

  test("the largest batch fits its body limit", () => {
    const ids = Array.from({ length: 10000 }, (_, i) => String(LARGEST - 10000n + BigInt(i)));
    assert.ok(Buffer.byteLength(body(ids)) <= bodyLimit(10000));
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
