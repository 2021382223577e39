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
//                  [--round-trips 20000] [--max-batch 10000]
// --threads N runs the same in N worker threads at once, a client each.
import http from "node:http";
import { performance } from "node:perf_hooks";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

import { Client } from "./index.js";

function args() {
  const out = { endpoint: "http://127.0.0.1:8080", ids: 5_000_000, threads: 1, roundTrips: 20_000, maxBatch: 10000 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "").replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(name in out)) throw new Error(`unknown option ${argv[i]}`);
    out[name] = name === "endpoint" ? argv[i + 1] : Number(argv[i + 1]);
  }
  return out;
}

// (b) A packed (ms, sequence) state with 16 sequence bits (65.5 M IDs/ms, so
// the layout's cap is not what is measured; as bench/client_bench.cc), one
// BigInt made per ID: the ms's prefix is made once per ms, and a BigInt per
// sequence value once at start.
function floorGenerator() {
  const epoch = 1288834974657;
  const sequenceBits = 16n;
  const node = (1n << (sequenceBits + 3n)) | (1n << sequenceBits);
  const sequences = Array.from({ length: 65536 }, (_, i) => BigInt(i));
  let ms = 0;
  let seq = 0;
  let prefix = 0n;
  return () => {
    let now = Date.now();
    if (now > ms) {
      ms = now;
      seq = 0;
      prefix = (BigInt(now - epoch) << (sequenceBits + 6n)) | node;
    } else if (++seq === 65536) {
      while ((now = Date.now()) <= ms);
      ms = now;
      seq = 0;
      prefix = (BigInt(now - epoch) << (sequenceBits + 6n)) | node;
    }
    return prefix | sequences[seq];
  };
}

// CPU time of the whole process (this thread, the HTTP parsing, GC) since
// `since`, in ns.
const cpuNs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) * 1000;
};

const median = (values) => values.slice().sort((x, y) => x - y)[Math.floor(values.length / 2)];

// (a) tryNext() on a full buffer, the take alone, against (b) the floor, in
// alternating rounds of the same count (a noisy machine slows both alike):
// the median ns/ID of each. Between rounds the client refills untimed.
async function timeTakeAndFloor(endpoint, maxBatch, rounds) {
  const client = new Client({ endpoints: [endpoint], initialBatch: maxBatch, maxBatch });
  const generate = floorGenerator();
  const take = [];
  const floor = [];
  let sink = 0n;
  try {
    await client.next();
    for (let round = 0; round < rounds; round++) {
      while (client.stats().buffered < maxBatch * 0.9) await new Promise((r) => setTimeout(r, 1));
      const count = client.stats().buffered - Math.floor(maxBatch / 10);
      let started = performance.now();
      for (let i = 0; i < count; i++) sink ^= client.tryNext();
      take.push(((performance.now() - started) * 1e6) / count);
      started = performance.now();
      for (let i = 0; i < count; i++) sink ^= generate();
      floor.push(((performance.now() - started) * 1e6) / count);
    }
    return { takeNs: median(take.slice(rounds / 5)), floorNs: median(floor.slice(rounds / 5)), sink };
  } finally {
    await client.close();
  }
}

// (a) a steady loop of next() with its refills; the loop yields to the
// event loop every 1000 IDs, as an application serving requests does.
async function timeSteady(endpoint, maxBatch, count) {
  const client = new Client({ endpoints: [endpoint], maxBatch });
  try {
    await client.next();
    const before = client.stats().calls;
    let sink = 0n;
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      if (i % 1000 === 0) await new Promise((r) => setImmediate(r));
      const id = client.tryNext();
      sink ^= id !== undefined ? id : await client.next();
    }
    const ns = ((performance.now() - started) * 1e6) / count;
    return { ns, cpuNs: cpuNs(cpu) / count, calls: client.stats().calls - before, sink };
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

async function measure({ endpoint, ids, roundTrips, maxBatch }) {
  const { takeNs, floorNs } = await timeTakeAndFloor(endpoint, maxBatch, 100);
  const steady = await timeSteady(endpoint, maxBatch, ids);
  // The floor's own loop of `ids` IDs, beside the steady loop's.
  const generate = floorGenerator();
  let sink = 0n;
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < ids; i++) sink ^= generate();
  const floorLoopNs = ((performance.now() - started) * 1e6) / ids;
  const floorLoopCpuNs = cpuNs(cpu) / ids;
  const trip = await timeRoundTrips(endpoint, roundTrips);
  return {
    floorNs,
    takeNs,
    floorLoopNs,
    steadyNs: steady.ns,
    steadyCpuNs: steady.cpuNs,
    floorLoopCpuNs,
    roundTripNs: trip.ns,
    refills: steady.calls,
    idsPerRoundTrip: ids / Math.max(1, steady.calls),
    sink: String(sink),
  };
}

function report(thread, r) {
  const f = (x) => x.toFixed(1);
  console.log(
    `thread ${thread}: (a) tryNext() from the buffer ${f(r.takeNs)} ns/ID against (b) the floor ` +
      `${f(r.floorNs)} ns/ID (medians of alternating rounds): ${(r.takeNs / r.floorNs).toFixed(2)}x\n` +
      `  a steady next() loop, refills and their parsing included: ${f(r.steadyNs)} ns/ID against ` +
      `the floor's loop ${f(r.floorLoopNs)} ns/ID: ${(r.steadyNs / r.floorLoopNs).toFixed(2)}x; CPU ` +
      `${f(r.steadyCpuNs)} against ${f(r.floorLoopCpuNs)} ns/ID: ` +
      `${(r.steadyCpuNs / r.floorLoopCpuNs).toFixed(2)}x\n` +
      `  (c) one HTTP round trip per ID: ${f(r.roundTripNs)} ns/ID, ` +
      `${(r.roundTripNs / r.steadyNs).toFixed(0)}x the steady loop\n` +
      `  ${r.refills} round trips for the steady loop's IDs: ${f(r.idsPerRoundTrip)} IDs per round trip`,
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
