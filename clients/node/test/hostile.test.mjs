// The client against the hostile stand-in for a node (tests/support/
// hostile_node.py): it hands out nothing but IDs a node could have issued
// (docs/clients.md, "What a client accepts"). Every bad answer is discarded
// whole, counted in stats().invalidAnswers, and its endpoint is backed off
// while the next one serves; alone, a hostile endpoint gets callers
// "unavailable" within emptyWaitMs and nothing else.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import { Client } from "../index.js";
import { HostileNode } from "./hostile.mjs";

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
// What a loaded 2-core machine adds to a bound measured in these tests.
const SLACK_MS = 700;
const OPTIONS = {
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
  const modes = ["valid", "behind", "two_issuers", ...BAD_MODES];
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

function assertValidIds(ids) {
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `IDs repeated or out of order at ${i}`);
  assert.ok(ids[0] >= FIRST_VALID_ID, `${ids[0]}`);
  assert.ok(ids[ids.length - 1] < 2n ** 63n);
}

// First in the file, while the process's peak RSS is still its own.
test("an endless or a huge body is read no further than the batch can take", async () => {
  for (const mode of ["endless_body", "huge_body"]) {
    const peakBefore = process.resourceUsage().maxRSS; // KiB
    const started = performance.now();
    await withClient([nodes[mode].url, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
      await client.next();
      assert.equal(client.stats().invalidAnswers, 1);
    });
    const took = performance.now() - started;
    const grown = process.resourceUsage().maxRSS - peakBefore;
    // 300 MB read whole took seconds and 150 MB more.
    assert.ok(grown < 24 * 1024, `${mode}: peak RSS grew by ${grown} KiB`);
    assert.ok(took < DEADLINE_MS + SLACK_MS, `${mode}: ${took} ms`);
  }
});

test("a trickling body fails over within the call deadline", async () => {
  await withClient([nodes.slow_body.url, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
    const started = performance.now();
    const first = await client.next();
    const took = performance.now() - started;
    assert.ok(took < DEADLINE_MS + SLACK_MS, `${took} ms`);
    assert.ok(first >= FIRST_VALID_ID);
    assert.equal(client.stats().invalidAnswers, 1);
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
  try {
    const trickling = `http://127.0.0.1:${server.address().port}`;
    await withClient([trickling, nodes.valid.url], { emptyWaitMs: 5000 }, async (client) => {
      const started = performance.now();
      assert.ok((await client.next()) >= FIRST_VALID_ID);
      const took = performance.now() - started;
      assert.ok(took < DEADLINE_MS + SLACK_MS, `${took} ms`);
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

for (const mode of BAD_MODES) {
  describe(`${mode} answers`, () => {
    test("are refused beside a valid node, which serves", async () => {
      const asked = (await nodes[mode].stats()).id_requests;
      const endpoints = [nodes[mode].url, nodes.valid.url];
      await withClient(endpoints, { emptyWaitMs: DEADLINE_MS + 3000 }, async (client) => {
        assertValidIds(await client.nextMany(3 * BATCH));
        await assertCounted(client);
      });
      assert.ok((await nodes[mode].stats()).id_requests > asked, "the hostile node was not asked");
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
