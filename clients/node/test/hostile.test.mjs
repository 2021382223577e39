// The client against the hostile stand-in for a node (tests/support/
// hostile_node.py): it hands out nothing but IDs a node could have issued
// (docs/clients.md, "What a client accepts"). The client asks for
// format=binary, so every mode is met in its binary form (or, for the
// faults of the text, as the JSON a proxy that dropped the parameter
// sends); the JSON forms are put to the JSON reader apart, and an old node
// that refuses binary is asked for JSON. Every bad answer is discarded
// whole, counted in stats().invalidAnswers, and its endpoint is backed off
// while another serves; alone, a hostile endpoint gets callers
// "unavailable" within emptyWaitMs and nothing else.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import { Client } from "../index.mjs";
import { parseBinaryBatch, parseJsonBatch } from "../lib/answer.js";
import { InvalidAnswer } from "../lib/transport.js";
import { HostileNode } from "./hostile.mjs";
import { httpGet } from "./snowidd.mjs";

// Every mode whose answers a client must refuse from the first batch on
// ("behind" is refused from its second, tested apart).
const BAD_MODES = (
  "duplicates padded hex blank floats numbers negative at_2_63 at_2_64 leading_zeros " +
  "plus_sign underscores unicode_digits too_many descending truncated_json html " +
  "slow_body endless_body huge_body"
).split(" ");
const FIRST_VALID_ID = 1_000_000n; // hostile_node.py's first ID
const BATCH = 100;
const DEADLINE_MS = 500; // callDeadlineMs, the default
const EMPTY_WAIT_MS = 200; // the default
// What a loaded 2-core machine adds to a bound measured in these tests: at
// a load average of 25 (other builds and tests beside these) a timer of
// 200 ms fired after up to 3.5 s. Still far below what a client that read
// a trickling, endless or 300 MB body would take.
const SLACK_MS = 2500;
// startWaitMs 0: these tests time emptyWaitMs from the first call on.
const OPTIONS = {
  startWaitMs: 0,
  initialBatch: BATCH,
  maxBatch: BATCH,
  callDeadlineMs: DEADLINE_MS,
  backoffInitialMs: 50,
  backoffMaxMs: 200,
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One node per mode, started side by side, shared by the tests.
const nodes = {};
before(async () => {
  const modes = ["valid", "behind", "two_issuers", "old_node", ...BAD_MODES];
  const started = await Promise.all(modes.map((mode) => HostileNode.start(mode)));
  for (const node of started) nodes[node.mode] = node;
});
after(() => Promise.all(Object.values(nodes).map((node) => node.stop())));

// Runs `body` with a client of `endpoints` and OPTIONS with `options`, then closes it.
async function withClient(endpoints, options, body) {
  const client = new Client({ ...OPTIONS, ...options, endpoints });
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

// invalidAnswers reaches 1 within a call deadline and some.
async function assertCounted(client) {
  const until = performance.now() + DEADLINE_MS + SLACK_MS;
  while (client.stats().invalidAnswers < 1 && performance.now() < until) await sleep(10);
  assert.ok(client.stats().invalidAnswers >= 1, JSON.stringify(client.stats()));
}

// Draws BATCH IDs at a time (each refill goes to an endpoint drawn at
// random) until `asked()` says the hostile endpoint was asked, then two
// batches more, timing every call; the IDs and the slowest call's ms.
async function drawUntilAsked(client, asked) {
  const ids = [];
  let slowest = 0;
  let extra = 2;
  for (let round = 0; round < 100 && extra > 0; round++) {
    if (await asked()) extra--;
    for (let i = 0; i < BATCH; i++) {
      const started = performance.now();
      ids.push(await client.next());
      slowest = Math.max(slowest, performance.now() - started);
    }
  }
  assert.ok(await asked(), "the hostile endpoint was never asked");
  return { ids, slowest };
}

// Whether `node` answered more ID requests than `before`.
const askedSince = (node, before) => async () => (await node.stats()).id_requests > before;

function assertValidIds(ids) {
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `IDs repeated or out of order at ${i}`);
  assert.ok(ids[0] >= FIRST_VALID_ID, `${ids[0]}`);
  assert.ok(ids[ids.length - 1] < 2n ** 63n);
}

// First in the file, while the process's peak RSS is still its own.
test("an endless or a huge body is read no further than the batch can take", async () => {
  for (const mode of ["endless_body", "huge_body"]) {
    const peakBefore = process.resourceUsage().maxRSS; // KiB
    const asked = askedSince(nodes[mode], (await nodes[mode].stats()).id_requests);
    await withClient([nodes[mode].url, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
      const { slowest } = await drawUntilAsked(client, asked);
      assert.ok(slowest < DEADLINE_MS + SLACK_MS, `${mode}: a call took ${slowest} ms`);
      await assertCounted(client);
    });
    const grown = process.resourceUsage().maxRSS - peakBefore;
    // 300 MB read whole took seconds and 150 MB more.
    assert.ok(grown < 24 * 1024, `${mode}: peak RSS grew by ${grown} KiB`);
  }
});

test("a trickling body fails over within the call deadline", async () => {
  const asked = askedSince(nodes.slow_body, (await nodes.slow_body.stats()).id_requests);
  await withClient([nodes.slow_body.url, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
    const { ids, slowest } = await drawUntilAsked(client, asked);
    assert.ok(slowest < DEADLINE_MS + SLACK_MS, `a call took ${slowest} ms`);
    assertValidIds(ids);
    await assertCounted(client);
  });
});

// A listener that answers with a status line and headers, a byte per
// 100 ms: what hostile_node.py's slow_body does to a body, done to the head.
function tricklingHeaders() {
  const head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n";
  const server = net.createServer((socket) => {
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < head.length && !socket.destroyed) socket.write(head[sent++]);
    }, 100);
    socket.on("error", () => {}); // the client went: the point
    socket.on("close", () => clearInterval(timer));
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

test("trickling headers fail over within the call deadline", async () => {
  const server = await tricklingHeaders();
  let connections = 0;
  server.on("connection", () => connections++);
  try {
    const trickling = `http://127.0.0.1:${server.address().port}`;
    await withClient([trickling, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
      const { ids, slowest } = await drawUntilAsked(client, async () => connections > 0);
      assert.ok(slowest < DEADLINE_MS + SLACK_MS, `a call took ${slowest} ms`);
      assertValidIds(ids);
      const until = performance.now() + DEADLINE_MS + SLACK_MS;
      while (client.stats().failedCalls < 1 && performance.now() < until) await sleep(10);
      assert.ok(client.stats().failedCalls >= 1, JSON.stringify(client.stats()));
    });
  } finally {
    server.close();
    server.unref();
  }
});

test("batches from two issuers in turn are all taken", async () => {
  await withClient([nodes.two_issuers.url], { emptyWaitMs: DEADLINE_MS + 3000 }, async (client) => {
    const ids = await client.nextMany(5 * BATCH);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(client.stats().invalidAnswers, 0);
    assert.ok(ids.some((id) => id >= 5_000_000_000n), "the second issuer never served");
  });
});

test("a batch behind the last one is refused", async () => {
  await withClient([nodes.behind.url], { emptyWaitMs: 1000 }, async (client) => {
    const first = await client.nextMany(BATCH);
    assert.deepEqual(first, Array.from({ length: BATCH }, (_, i) => FIRST_VALID_ID + BigInt(i)));
    await assert.rejects(client.next(), { code: "unavailable" });
    await assertCounted(client);
  });
  assert.ok((await nodes.behind.stats()).id_requests >= 2); // the refused batch was asked
});

// The modes side by side (each has a node of its own; the valid one serves
// them all): their waits are deadlines and backoffs, not work.
describe("every bad mode", { concurrency: 4 }, () => {
  for (const mode of BAD_MODES) {
    describe(`${mode} answers`, () => {
      test("are refused beside a valid node, which serves", async () => {
        const asked = askedSince(nodes[mode], (await nodes[mode].stats()).id_requests);
        const endpoints = [nodes[mode].url, nodes.valid.url];
        await withClient(endpoints, { emptyWaitMs: DEADLINE_MS + 3000 }, async (client) => {
          assertValidIds((await drawUntilAsked(client, asked)).ids);
          await assertCounted(client);
        });
      });

      test("are refused alone: unavailable within emptyWaitMs, nothing handed out", async () => {
        const asked = (await nodes[mode].stats()).id_requests;
        await withClient([nodes[mode].url], { emptyWaitMs: EMPTY_WAIT_MS }, async (client) => {
          const started = performance.now();
          await assert.rejects(client.next(), { code: "unavailable" });
          const took = performance.now() - started;
          assert.ok(took < EMPTY_WAIT_MS + SLACK_MS, `${took} ms`);
          await assertCounted(client);
          assert.equal(client.tryNext(), undefined);
          await assert.rejects(client.next(), { code: "unavailable" });
        });
        assert.ok((await nodes[mode].stats()).id_requests > asked, "the hostile node was not asked");
      });
    });
  }
});

test("an old node that refuses format=binary is asked for JSON, and serves", async () => {
  await withClient([nodes.old_node.url], { emptyWaitMs: 3000 }, async (client) => {
    const ids = await client.nextMany(3 * BATCH);
    assertValidIds(ids);
    const stats = client.stats();
    assert.equal(stats.invalidAnswers, 0);
    assert.equal(stats.failedCalls, 1, JSON.stringify(stats)); // the refusal, once
    assert.ok(stats.calls >= 4, JSON.stringify(stats));
  });
});

// The JSON reader against every mode's JSON answer: the client's own calls
// above ask for binary, and meet JSON only from a node that refused it.
describe("each mode's answer as the readers see it", () => {
  const BODY_FAULTS = new Set(["slow_body", "endless_body", "huge_body"]); // the transport's, tested above
  for (const mode of BAD_MODES.filter((m) => !BODY_FAULTS.has(m))) {
    test(`${mode}: the JSON answer is refused`, async () => {
      const answer = await httpGet(`${nodes[mode].url}/v1/ids?count=${BATCH}`);
      assert.equal(answer.status, 200);
      assert.throws(() => parseJsonBatch(new TextEncoder().encode(answer.body), BATCH), InvalidAnswer);
    });
  }
  test("valid: both forms are taken", async () => {
    const json = await httpGet(`${nodes.valid.url}/v1/ids?count=${BATCH}`);
    assert.equal(parseJsonBatch(new TextEncoder().encode(json.body), BATCH).length, BATCH);
    const binary = await httpGetBytes(`${nodes.valid.url}/v1/ids?count=${BATCH}&format=binary`);
    assert.equal(parseBinaryBatch(binary.bytes, binary.type, BATCH).length, BATCH);
  });
});

test("after the first batch, an empty buffer waits emptyWaitMs, not startWaitMs", async () => {
  const node = await HostileNode.start("valid");
  try {
    await withClient([node.url], { startWaitMs: 5000, emptyWaitMs: 100 }, async (client) => {
      await client.nextMany(BATCH);
      await node.stop(); // nothing more will come
      while (client.tryNext() !== undefined); // what a refill brought in the meantime
      const started = performance.now();
      await assert.rejects(client.next(), { code: "unavailable" });
      const took = performance.now() - started;
      assert.ok(took < 100 + SLACK_MS, `${took} ms`);
    });
  } finally {
    await node.stop();
  }
});

// GET `url` on a fresh connection: { bytes, type } of its body.
function httpGetBytes(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, (response) => {
      const chunks = [];
      response.on("data", (chunk) => chunks.push(chunk));
      response.on("end", () => {
        const joined = Buffer.concat(chunks);
        resolve({ bytes: new Uint8Array(joined), type: response.headers["content-type"] });
      });
    }).on("error", reject);
  });
}
