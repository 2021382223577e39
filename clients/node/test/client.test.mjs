// The client's behaviours one by one, against real snowidd nodes: options,
// BigInt IDs, decode, failover order, empty wait, max age, refusals,
// segment tags and close.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { Client, DEFAULTS, SnowidError, decodeId } from "../index.mjs";
import { Node, deadEndpoint, httpGet, rejection } from "./snowidd.mjs";

const TOKEN = "s3cret-token";
const run = promisify(execFile);
// For tests that are not about timing bounds: on a 2-core machine under
// other tests' load (load average 17 seen) a first round trip can take
// longer than the default deadline (500 ms) and empty wait (200 ms).
const PATIENT = { callDeadlineMs: 3000, emptyWaitMs: 5000 };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// What a loaded 2-core machine adds to a wait measured here (a 200 ms timer
// fired after up to 3.5 s at a load average of 25).
const SLACK_MS = 2500;

describe("options", () => {
  const bad = [
    [{}, /^endpoints: at least one/],
    [{ endpoints: [] }, /^endpoints: at least one/],
    [{ endpoints: ["127.0.0.1:8080"] }, /^endpoints: '127.0.0.1:8080'/],
    [{ endpoints: ["ftp://127.0.0.1:21"] }, /^endpoints: 'ftp:/],
    [{ endpoints: ["http://a:8080/?x=1"] }, /^endpoints:/],
    [{ endpoints: ["http://a:8080?"] }, /^endpoints:/],
    [{ endpoints: ["http://a:8080#"] }, /^endpoints:/],
    [{ endpoints: ["http://u:p@a:8080"] }, /credentials/],
    [{ endpoints: ["http://a:1"], agent: "9lives" }, /^agent: '9lives'/],
    [{ endpoints: ["http://a:1"], agent: "a".repeat(65) }, /^agent:/],
    [{ endpoints: ["http://a:1"], agent: "bad_name" }, /^agent:/],
    [{ endpoints: ["http://a:1"], bearerToken: "a\nb" }, /^bearerToken:/],
    [{ endpoints: ["http://a:1"], callDeadlineMs: 0 }, /^callDeadlineMs:/],
    [{ endpoints: ["http://a:1"], callDeadlineMs: NaN }, /^callDeadlineMs:/],
    [{ endpoints: ["http://a:1"], emptyWaitMs: -1 }, /^emptyWaitMs:/],
    [{ endpoints: ["http://a:1"], emptyWaitMs: Infinity }, /^emptyWaitMs:/],
    [{ endpoints: ["http://a:1"], startWaitMs: -1 }, /^startWaitMs:/],
    [{ endpoints: ["http://a:1"], startWaitMs: "2s" }, /^startWaitMs:/],
    [{ endpoints: ["http://a:1"], lowWater: 0 }, /^lowWater:/],
    [{ endpoints: ["http://a:1"], lowWater: 1.5 }, /^lowWater:/],
    [{ endpoints: ["http://a:1"], initialBatch: 0 }, /^initialBatch:/],
    [{ endpoints: ["http://a:1"], initialBatch: 2.5 }, /^initialBatch:/],
    [{ endpoints: ["http://a:1"], initialBatch: 100, maxBatch: 99 }, /^maxBatch:/],
    [{ endpoints: ["http://a:1"], maxBatch: 1_000_001 }, /^maxBatch:/],
    [{ endpoints: ["http://a:1"], refillPeriodMs: 0 }, /^refillPeriodMs:/],
    [{ endpoints: ["http://a:1"], maxAgeMs: 9 }, /^maxAgeMs:/],
    [{ endpoints: ["http://a:1"], backoffInitialMs: 0 }, /^backoffInitialMs:/],
    [{ endpoints: ["http://a:1"], backoffInitialMs: 200, backoffMaxMs: 100 }, /^backoffMaxMs:/],
    [{ endpoints: ["http://a:1"], maxAge: 100 }, /^maxAge: no such option/],
  ];
  for (const [options, message] of bad) {
    test(`refuses ${JSON.stringify(options)}`, () => {
      assert.throws(() => new Client(options), (error) => {
        assert.ok(error instanceof SnowidError);
        assert.equal(error.code, "invalid_argument");
        assert.match(error.message, message);
        return true;
      });
    });
  }

  test("defaults are the C++ client's, with HTTP's max batch", () => {
    assert.deepEqual(
      { ...DEFAULTS, endpoints: undefined },
      {
        endpoints: undefined, bearerToken: "", agent: "", ca: undefined, callDeadlineMs: 500,
        emptyWaitMs: 200, startWaitMs: 2000, lowWater: 0.5, initialBatch: 1000, maxBatch: 10000,
        refillPeriodMs: 500, maxAgeMs: 10000, backoffInitialMs: 100, backoffMaxMs: 5000,
      },
    );
  });
});

describe("against live nodes", () => {
  let plain; // no token, segment tags created on first use
  let guarded; // a bearer token, tags not created
  before(async () => {
    [plain, guarded] = await Node.startAll([
      { worker: 5, datacenter: 1, extra: ["--segment-auto-create", "true"] },
      { worker: 6, datacenter: 2, extra: ["--bearer-token", TOKEN] },
    ]);
  });
  after(async () => {
    await Promise.all([plain?.stop(), guarded?.stop()]);
  });

  test("IDs are BigInts above 2^53 that round-trip exactly and decode as the node does", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], agent: "node-test" });
    try {
      const id = await client.next();
      assert.equal(typeof id, "bigint");
      assert.ok(id > 2n ** 53n, `${id} is above 2^53`);
      const answer = await httpGet(`${plain.url}/v1/decode/${id}`);
      assert.equal(answer.status, 200);
      // The server's own text of the ID, taken from the raw JSON, not through Number.
      const text = /"id":"(\d+)"/.exec(answer.body)[1];
      assert.equal(BigInt(text), id);
      assert.equal(String(id), text);
      const theirs = JSON.parse(answer.body);
      const ours = await client.decode(id);
      assert.deepEqual(
        { timestampMs: ours.timestampMs, time: ours.time.toISOString(), datacenter: ours.datacenter,
          worker: ours.worker, sequence: ours.sequence },
        { timestampMs: theirs.timestamp_ms, time: theirs.time, datacenter: theirs.datacenter,
          worker: theirs.worker, sequence: theirs.sequence },
      );
      assert.equal(ours.worker, 5);
      assert.equal(ours.datacenter, 1);
      assert.deepEqual(decodeId(await client.layout(), text), ours);
    } finally {
      await client.close();
    }
  });

  test("nextMany gives distinct increasing IDs across several refills", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], initialBatch: 100, maxBatch: 1000 });
    try {
      const ids = await client.nextMany(2500);
      assert.equal(ids.length, 2500);
      for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1]);
      assert.ok(client.stats().calls >= 3);
      assert.ok((await client.next()) > ids[2499]);
    } finally {
      await client.close();
    }
  });

  test("a batch above the node's max_batch is cut to it", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], initialBatch: 20000, maxBatch: 20000 });
    try {
      const ids = await client.nextMany(30000);
      assert.equal(new Set(ids).size, 30000);
    } finally {
      await client.close();
    }
  });

  test("an endpoint down is skipped: the live one serves, without an error", async () => {
    const client = new Client({ ...PATIENT, endpoints: [await deadEndpoint(), plain.url], initialBatch: 10,
      maxBatch: 10 });
    try {
      // 30 refills, each to an endpoint drawn among the healthy: the dead one
      // is drawn (and backed off) at the latest by the second refill most times.
      for (const id of await client.nextMany(300)) assert.equal((await client.decode(id)).worker, 5);
      assert.ok(client.stats().failedCalls >= 1, JSON.stringify(client.stats()));
    } finally {
      await client.close();
    }
  });

  test("every node down: next() rejects with unavailable within emptyWaitMs", async () => {
    const client = new Client({ endpoints: [await deadEndpoint(), await deadEndpoint()], emptyWaitMs: 150,
      startWaitMs: 0 });
    try {
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const error = await rejection(client.next());
        const took = performance.now() - started;
        assert.equal(error.code, "unavailable", error.message);
        // emptyWaitMs and a busy machine's timer lateness: the endpoints refuse at once.
        assert.ok(took < 150 + SLACK_MS, `waited ${took} ms`);
      }
    } finally {
      await client.close();
    }
  });

  test("until the first batch has arrived, an empty buffer waits startWaitMs, not emptyWaitMs", async () => {
    const client = new Client({ endpoints: [await deadEndpoint()], emptyWaitMs: 0, startWaitMs: 600 });
    try {
      const started = performance.now();
      const error = await rejection(client.next());
      const took = performance.now() - started;
      assert.equal(error.code, "unavailable", error.message);
      assert.match(error.message, /within 600 ms|ECONNREFUSED/);
      assert.ok(took >= 590 && took < 600 + SLACK_MS, `waited ${took} ms`);
    } finally {
      await client.close();
    }
  });

  test("20 cold starts with the default options: every first call gets an ID", async () => {
    const failures = [];
    for (let i = 0; i < 20; i++) {
      const client = new Client({ endpoints: [plain.url, guarded.url], bearerToken: TOKEN });
      try {
        const id = await client.next(); // at once, on a client just made
        assert.equal(typeof id, "bigint");
      } catch (error) {
        failures.push(`start ${i}: ${error.message}`);
      } finally {
        await client.close();
      }
    }
    assert.deepEqual(failures, []);
  });

  test("stats count calls, failed calls and IDs received, served and expired", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], initialBatch: 100, maxBatch: 100,
      maxAgeMs: 400 });
    try {
      await client.nextMany(250);
      await client.nextTag("stats");
      let stats = client.stats();
      assert.equal(stats.failedCalls, 0);
      assert.equal(stats.invalidAnswers, 0);
      assert.equal(stats.idsServed, 251);
      assert.equal(stats.idsExpired, 0);
      // 3 calls for the Snowflake IDs and 1 for the tag, each of 100, and
      // perhaps one more still out.
      assert.ok(stats.calls >= 4 && stats.idsReceived >= 400, JSON.stringify(stats));
      assert.ok(stats.idsReceived <= 100 * stats.calls, JSON.stringify(stats));
      // The Snowflake IDs buffered now expire unissued; segment numbers
      // (99 of the tag's batch) never do.
      const buffered = stats.idsReceived - stats.idsServed - 99;
      assert.ok(buffered > 0, JSON.stringify(stats));
      await sleep(400 + 300);
      stats = client.stats();
      assert.ok(stats.idsExpired >= buffered, JSON.stringify(stats));
      assert.equal(stats.idsServed, 251);
    } finally {
      await client.close();
    }
  });

  test("IDs older than maxAgeMs are dropped, never handed out", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], maxAgeMs: 50, initialBatch: 1000 });
    try {
      const first = await client.decode(await client.next());
      await sleep(300);
      const asked = Date.now();
      const second = await client.decode(await client.next());
      // The buffered rest of the first batch (999 IDs) is gone: this ID was
      // fetched less than maxAgeMs (plus a refill's and a tick's slack) ago.
      assert.ok(second.timestampMs >= asked - 50 - 30, `${second.timestampMs} vs asked at ${asked}`);
      assert.ok(second.timestampMs > first.timestampMs + 200);
    } finally {
      await client.close();
    }
  });

  test("a refused token surfaces as invalid_argument; the right one works", async () => {
    const wrong = new Client({ ...PATIENT, endpoints: [guarded.url], bearerToken: "wrong" });
    const right = new Client({ ...PATIENT, endpoints: [guarded.url], bearerToken: TOKEN, agent: "billing" });
    try {
      const started = performance.now();
      const error = await rejection(wrong.next());
      assert.equal(error.code, "invalid_argument");
      assert.equal(error.httpStatus, 401);
      // At once, not after emptyWaitMs (5 s): a refusal is not worth waiting for.
      assert.ok(performance.now() - started < 4000);
      assert.equal(typeof (await right.next()), "bigint");
      const metrics = await httpGet(`${guarded.url}/metrics`);
      assert.match(metrics.body, /agent="billing"/);
    } finally {
      await Promise.all([wrong.close(), right.close()]);
    }
  });

  test("segment tags: consecutive numbers from a buffer of their own, which never ages", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url], maxAgeMs: 10, initialBatch: 10 });
    try {
      const numbers = [];
      for (let i = 0; i < 25; i++) numbers.push(await client.nextTag("orders"));
      await sleep(100);
      numbers.push(await client.nextTag("orders"));
      assert.equal(typeof numbers[0], "bigint");
      for (let i = 1; i < numbers.length; i++) assert.equal(numbers[i], numbers[i - 1] + 1n);
      assert.equal(await client.nextTag("invoices"), 1n);
    } finally {
      await client.close();
    }
  });

  test("an unknown tag is not_found", async () => {
    const client = new Client({ ...PATIENT, endpoints: [guarded.url], bearerToken: TOKEN });
    try {
      const error = await rejection(client.nextTag("no-such-tag"));
      assert.equal(error.code, "not_found", error.message);
      assert.equal(error.httpStatus, 404);
    } finally {
      await client.close();
    }
  });

  test("a client never closed does not keep the process alive", async () => {
    const program = `
      import { Client } from ${JSON.stringify(new URL("../index.mjs", import.meta.url).href)};
      const client = new Client({ endpoints: [${JSON.stringify(plain.url)}] });
      console.log(String(await client.next()));`;
    const started = performance.now();
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", program], { timeout: 10000 });
    assert.ok(BigInt(stdout.trim()) > 0n);
    assert.ok(performance.now() - started < 8000);
  });

  test("close() ends the refill task promptly; calls after it reject", async () => {
    const client = new Client({ ...PATIENT, endpoints: [plain.url] });
    await client.next();
    const started = performance.now();
    await client.close();
    assert.ok(performance.now() - started < SLACK_MS);
    assert.equal(client.tryNext(), undefined);
    assert.equal((await rejection(client.next())).code, "unavailable");
  });
});
