// Spread: 30 clients (in this one process, each a Client of its own, as 30
// application instances would have) given the same 3 endpoints load every
// node alike, and after one node is killed the other two alike, with no
// error at the callers. Each node's share is what it issued to the clients'
// agent, read from its /metrics (snowid_ids_issued_total). And a client
// that drains its buffer faster than one node refills it has a call out at
// each node at once, never two at one.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";

import { Client } from "../index.mjs";
import { Node, httpGet } from "./snowidd.mjs";

const CLIENTS = 30;
const AGENT = "spread";
const PHASE_MS = 2500;
// Small batches, so that a phase holds about 1,500 refills: each node's
// share is then within a few percent of a third (or a half) by chance
// alone, far inside the bounds.
const BATCH = 200;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function issued(node) {
  const { body } = await httpGet(`${node.url}/metrics`);
  const line = new RegExp(`^snowid_ids_issued_total\\{agent="${AGENT}"\\} (\\d+)$`, "m").exec(body);
  return line ? Number(line[1]) : 0;
}

// Each node's share of `deltas` against their mean; fails outside ±bound.
function assertEven(deltas, bound, what) {
  const mean = deltas.reduce((a, b) => a + b, 0) / deltas.length;
  const shares = deltas.map((d) => d / mean);
  const text = `${what}: issued ${deltas.join(", ")}; shares ${shares.map((s) => s.toFixed(3)).join(", ")}`;
  console.log(text);
  for (const share of shares) assert.ok(Math.abs(share - 1) <= bound, text);
}

test(`${CLIENTS} clients spread over 3 nodes (±20%), then over the 2 left after a kill (±25%)`, async () => {
  const nodes = await Node.startAll([1, 2, 3].map((worker) => ({ worker, datacenter: 6 })));
  const endpoints = nodes.map((node) => node.url);
  // Wide waits: this test is about where refills go, not the machine's speed.
  const clients = Array.from({ length: CLIENTS }, () => new Client({
    endpoints, agent: AGENT, initialBatch: BATCH, maxBatch: BATCH, callDeadlineMs: 3000, emptyWaitMs: 5000,
  }));
  let drawing = true;
  const errors = [];
  let drawn = 0;
  // Each client draws 20 IDs every 5 ms or so: about 4,000 a second.
  const draws = clients.map(async (client) => {
    while (drawing) {
      try {
        drawn += (await client.nextMany(20)).length;
      } catch (error) {
        errors.push(error.message);
      }
      await sleep(5);
    }
  });
  try {
    await sleep(300); // the first batches
    const before = await Promise.all(nodes.map(issued));
    await sleep(PHASE_MS);
    const after = await Promise.all(nodes.map(issued));
    assertEven(after.map((n, i) => n - before[i]), 0.2, "3 nodes");

    await nodes[0].kill();
    await sleep(300); // the calls that were out at the dead node fail over
    const left = nodes.slice(1);
    const beforeLeft = await Promise.all(left.map(issued));
    await sleep(PHASE_MS);
    const afterLeft = await Promise.all(left.map(issued));
    assertEven(afterLeft.map((n, i) => n - beforeLeft[i]), 0.25, "2 nodes after the kill");
  } finally {
    drawing = false;
    await Promise.all(draws);
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(nodes.map((node) => node.stop()));
  }
  assert.deepEqual(errors, []);
  const refills = clients.reduce((sum, client) => sum + client.stats().calls, 0);
  console.log(`${drawn} IDs drawn by ${CLIENTS} clients in ${refills} refills`);
});

// A stand-in for a node that answers GET /v1/ids?count=N&format=binary
// with N rising numbers after `delayMs`, and counts its calls at once.
function slowNode(delayMs, first) {
  let next = first;
  const node = { calls: 0, now: 0, most: 0 };
  node.server = http.createServer((request, response) => {
    const count = Number(new URL(request.url, "http://x").searchParams.get("count"));
    node.calls++;
    node.most = Math.max(node.most, ++node.now);
    setTimeout(() => {
      const body = Buffer.alloc(8 * count);
      for (let i = 0; i < count; i++) body.writeBigInt64LE(BigInt(next++), 8 * i);
      node.now--;
      response.writeHead(200, { "content-type": "application/octet-stream", "snowid-issuer": `i${first}` });
      response.end(body);
    }, delayMs);
  });
  return new Promise((resolve) => node.server.listen(0, "127.0.0.1", () => {
    node.url = `http://127.0.0.1:${node.server.address().port}`;
    resolve(node);
  }));
}

test("a buffer that drains faster than one node refills it has a call out at each node, one at most", async () => {
  const nodes = await Promise.all([slowNode(40, 1e6), slowNode(40, 5e9), slowNode(40, 9e9)]);
  let most = 0;
  const sampler = setInterval(() => (most = Math.max(most, nodes.reduce((sum, n) => sum + n.now, 0))), 2);
  const client = new Client({ endpoints: nodes.map((n) => n.url), initialBatch: 100, maxBatch: 100,
    emptyWaitMs: 5000 });
  try {
    // Drawn as fast as they come: every batch runs dry before the next.
    const ids = await client.nextMany(6000);
    assert.equal(new Set(ids).size, ids.length);
  } finally {
    clearInterval(sampler);
    await client.close();
    for (const node of nodes) node.server.close();
  }
  for (const node of nodes) assert.equal(node.most, 1, `${node.url}: ${node.most} calls of one buffer at once`);
  assert.equal(most, 3, "never a call out at each of the 3 nodes at once");
});
