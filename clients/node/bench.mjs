// The Node.js client's benchmark (issue 24 item 3), not run by ctest.
// In one run, per thread, against a live snowidd:
//   (a) IDs from the client's buffer: tryNext() alone while buffered, and a
//       steady loop of next() that pays for its refills (on this thread: the
//       JSON and BigInt parsing of each batch runs here too);
//   (b) the floor: the fastest in-process Snowflake generator written here
//       (a packed (ms, sequence) state, one BigInt made per ID);
//   (c) one HTTP round trip per ID: GET /v1/id on a keep-alive connection;
// and the HTTP round trips the client made for the IDs it served.
//
//   node bench.mjs --endpoint http://127.0.0.1:8080 [--ids 5000000] [--threads 1]
// --threads N runs the same in N worker threads at once, a client each.
import http from "node:http";
import { performance } from "node:perf_hooks";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

import { Client } from "./index.js";

function args() {
  const out = { endpoint: "http://127.0.0.1:8080", ids: 5_000_000, threads: 1, roundTrips: 20_000 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "").replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(name in out)) throw new Error(`unknown option ${argv[i]}`);
    out[name] = name === "endpoint" ? argv[i + 1] : Number(argv[i + 1]);
  }
  return out;
}

// (b) Twitter's layout, datacenter 1, worker 1: the state is the current
// ms's BigInt prefix and a sequence; a BigInt per sequence value is made once.
function floorGenerator() {
  const epoch = 1288834974657;
  const node = (1n << 17n) | (1n << 12n);
  const sequences = Array.from({ length: 4096 }, (_, i) => BigInt(i));
  let ms = 0;
  let seq = 0;
  let prefix = 0n;
  return () => {
    let now = Date.now();
    if (now > ms) {
      ms = now;
      seq = 0;
      prefix = (BigInt(now - epoch) << 22n) | node;
    } else if (++seq === 4096) {
      while ((now = Date.now()) <= ms);
      ms = now;
      seq = 0;
      prefix = (BigInt(now - epoch) << 22n) | node;
    }
    return prefix | sequences[seq];
  };
}

function timeFloor(count) {
  const next = floorGenerator();
  let sink = 0n;
  const started = performance.now();
  for (let i = 0; i < count; i++) sink ^= next();
  return { ns: ((performance.now() - started) * 1e6) / count, sink };
}

// (a) tryNext() on a full buffer: the take alone, no refill on the clock.
async function timeTake(endpoint) {
  const client = new Client({ endpoints: [endpoint], initialBatch: 10000, maxBatch: 10000 });
  try {
    await client.next();
    while (client.stats().buffered < 9000) await new Promise((r) => setTimeout(r, 5));
    const count = client.stats().buffered - 1000;
    let sink = 0n;
    const started = performance.now();
    for (let i = 0; i < count; i++) sink ^= client.tryNext();
    return { ns: ((performance.now() - started) * 1e6) / count, sink };
  } finally {
    await client.close();
  }
}

// (a) a steady loop of next() with its refills; the loop yields to the
// event loop every 1000 IDs, as an application serving requests does.
async function timeSteady(endpoint, count) {
  const client = new Client({ endpoints: [endpoint] });
  try {
    await client.next();
    const before = client.stats().calls;
    let sink = 0n;
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
      const id = client.tryNext();
      sink ^= id !== undefined ? id : await client.next();
    }
    const ns = ((performance.now() - started) * 1e6) / count;
    return { ns, calls: client.stats().calls - before, sink };
  } finally {
    await client.close();
  }
}

// (c) GET /v1/id, one round trip per ID, on one keep-alive connection.
async function timeRoundTrips(endpoint, count) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise((resolve, reject) => {
      http
        .get(`${endpoint}/v1/id`, { agent }, (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk) => (body += chunk));
          response.on("end", () => resolve(BigInt(JSON.parse(body).id)));
        })
        .on("error", reject);
    });
  let sink = 0n;
  const started = performance.now();
  for (let i = 0; i < count; i++) sink ^= await get();
  agent.destroy();
  return { ns: ((performance.now() - started) * 1e6) / count, sink };
}

async function measure({ endpoint, ids, roundTrips }) {
  timeFloor(ids); // warm-up, for the JIT
  const floor = timeFloor(ids);
  const take = await timeTake(endpoint);
  const steady = await timeSteady(endpoint, ids);
  const trip = await timeRoundTrips(endpoint, roundTrips);
  return {
    floorNs: floor.ns,
    takeNs: take.ns,
    steadyNs: steady.ns,
    roundTripNs: trip.ns,
    refills: steady.calls,
    idsPerRoundTrip: ids / Math.max(1, steady.calls),
  };
}

function report(thread, r) {
  const f = (x) => x.toFixed(1);
  console.log(
    `thread ${thread}: (a) tryNext from the buffer ${f(r.takeNs)} ns/ID, steady next() loop ` +
      `${f(r.steadyNs)} ns/ID; (b) floor ${f(r.floorNs)} ns/ID; (c) HTTP round trip ` +
      `${f(r.roundTripNs)} ns/ID\n  (a)/(b): take ${(r.takeNs / r.floorNs).toFixed(2)}x, steady ` +
      `${(r.steadyNs / r.floorNs).toFixed(2)}x; (c)/(a steady) ${(r.roundTripNs / r.steadyNs).toFixed(0)}x; ` +
      `${r.refills} refills for the steady loop's IDs: ${f(r.idsPerRoundTrip)} IDs per round trip`,
  );
}

if (!isMainThread) {
  parentPort.postMessage(await measure(workerData));
} else {
  const options = args();
  if (options.threads <= 1) {
    report(0, await measure(options));
  } else {
    const runs = Array.from({ length: options.threads }, () => {
      const worker = new Worker(new URL(import.meta.url), { workerData: options });
      return new Promise((resolve, reject) => worker.once("message", resolve).once("error", reject));
    });
    (await Promise.all(runs)).forEach((r, i) => report(i, r));
  }
}
