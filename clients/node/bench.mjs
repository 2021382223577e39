// The Node.js client's benchmark, not run by ctest: the sustained rate of
// the client at its default options against a plain in-process Snowflake
// generator, with 1 and with 4 threads (worker threads), in one run.
//
//   SNOWIDD=build/src/server/snowidd node clients/node/bench.mjs [--nodes 3]
//       [--threads 1,4] [--warmup 1] [--rounds 5] [--seconds 1]
//   node clients/node/bench.mjs --endpoints http://127.0.0.1:8080,http://127.0.0.1:8081
//
// The generator is what an application would write instead of the client:
// a 41/10/12 Snowflake layout, one (ms, sequence) state behind a lock (a
// futex-style mutex on a SharedArrayBuffer, so that all threads share it,
// as one process's generator is shared), the next millisecond awaited under
// the lock when the 12-bit sequence runs out, one BigInt made per ID: at
// most 4,096 IDs a ms, whatever the threads. The client side: each thread
// its own Client (a Client belongs to one thread) with the default options
// and every node's endpoint. Both loops take IDs one at a time and yield to
// the event loop every 1,000 IDs, as an application serving requests does.
// Per thread count: each side --warmup seconds untimed, then --rounds
// rounds of --seconds timed of each side in turn (the order swapped every
// round, so that a load that comes and goes on a shared machine falls on
// both); it prints the median rates, their ratio and each round's. Without
// --endpoints the benchmark starts --nodes snowidd nodes from $SNOWIDD
// (default layout: each issues at most 4,096 IDs a ms, after running up to
// 1 s ahead of its clock) on loopback and stops them at the end.
import os from "node:os";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

import { Client } from "./index.mjs";

const EPOCH_MS = 1288834974657;
const SEQUENCE_MASK = 4095;
const YIELD_EVERY = 1000;

function args() {
  const out = { nodes: 3, seconds: 1, rounds: 5, warmup: 1, threads: "1,4", endpoints: "" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "");
    if (!(name in out) || argv[i + 1] === undefined) throw new Error(`unknown option or no value: ${argv[i]}`);
    out[name] = typeof out[name] === "number" ? Number(argv[i + 1]) : argv[i + 1];
  }
  out.threads = out.threads.split(",").map(Number);
  return out;
}

// The shared state of the in-process generator: [lock], and under the lock
// [last ms] and [sequence].
function generatorState() {
  return { lock: new SharedArrayBuffer(4), last: new SharedArrayBuffer(8), sequence: new SharedArrayBuffer(4) };
}

// A lock-based Snowflake generator over `state` (shared by every thread
// given it). The mutex: 0 free, 1 held, 2 held with waiters (Atomics.wait).
function generator(state, worker) {
  const lock = new Int32Array(state.lock);
  const last = new Float64Array(state.last);
  const sequence = new Int32Array(state.sequence);
  const node = BigInt(worker) << 12n;
  const acquire = () => {
    let c = Atomics.compareExchange(lock, 0, 0, 1);
    if (c === 0) return;
    if (c !== 2) c = Atomics.exchange(lock, 0, 2);
    while (c !== 0) {
      Atomics.wait(lock, 0, 2);
      c = Atomics.exchange(lock, 0, 2);
    }
  };
  const release = () => {
    if (Atomics.sub(lock, 0, 1) !== 1) {
      Atomics.store(lock, 0, 0);
      Atomics.notify(lock, 0, 1);
    }
  };
  return () => {
    acquire();
    let ms = Date.now();
    let seq = 0;
    if (ms <= last[0]) {
      ms = last[0];
      seq = (sequence[0] + 1) & SEQUENCE_MASK;
      if (seq === 0) while ((ms = Date.now()) <= last[0]); // the sequence ran out: the next ms
    }
    last[0] = ms;
    sequence[0] = seq;
    release();
    return (BigInt(ms - EPOCH_MS) << 22n) | node | BigInt(seq);
  };
}

// Takes IDs from `take` (sync; when it gives undefined, `wait` async) for
// `ms`; the IDs taken and the ms it took.
async function drain(take, wait, ms) {
  let sink = 0n;
  let count = 0;
  const started = performance.now();
  while (performance.now() - started < ms) {
    for (let i = 0; i < YIELD_EVERY; i++) {
      const id = take();
      sink ^= id !== undefined ? id : await wait();
    }
    count += YIELD_EVERY;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { count, ms: performance.now() - started, sink: String(sink) };
}

// In a worker thread: a generator over the shared state and a client of
// its own, each drained on the main thread's word ({ side, ms }) until told
// to stop.
async function workerMain({ state, worker, endpoints }) {
  const generate = generator(state, worker);
  const client = new Client({ endpoints }); // the default options
  await client.next();
  const sides = {
    generator: [generate, generate],
    client: [() => client.tryNext(), () => client.next()],
  };
  parentPort.postMessage({ ready: true });
  for (;;) {
    const order = await new Promise((resolve) => parentPort.once("message", resolve));
    if (order.side === undefined) break;
    const [take, wait] = sides[order.side];
    parentPort.postMessage(await drain(take, wait, order.ms));
  }
  parentPort.postMessage({ stats: client.stats() });
  await client.close();
}

const median = (values) => values.slice().sort((x, y) => x - y)[Math.floor(values.length / 2)];

// `threads` worker threads: each side drained by all at once, warm-up
// first, then `rounds` rounds of both in turn (the order swapped each
// round, so that a load that comes and goes falls on both); the median
// rates (IDs a second in all threads) and the clients' stats.
async function runThreads(threads, { endpoints, warmupMs, timedMs, rounds }) {
  const state = generatorState();
  const workers = Array.from({ length: threads }, (_, worker) =>
    new Worker(new URL(import.meta.url), { workerData: { state, worker, endpoints } }));
  // One answer from worker w; its error listener goes with the answer, so
  // that the rounds do not pile up listeners on a worker.
  const next = (w) =>
    new Promise((resolve, reject) => {
      const failed = (error) => {
        w.off("message", answered);
        reject(error);
      };
      const answered = (message) => {
        w.off("error", failed);
        resolve(message);
      };
      w.once("message", answered).once("error", failed);
    });
  const all = async (order) => {
    const answers = workers.map(next);
    for (const w of workers) w.postMessage(order);
    return Promise.all(answers);
  };
  await Promise.all(workers.map(next));
  const rate = (done) => done.reduce((sum, r) => sum + r.count / (r.ms / 1000), 0);
  const rates = { generator: [], client: [] };
  for (const side of ["generator", "client"]) await all({ side, ms: warmupMs });
  for (let round = 0; round < rounds; round++) {
    const sides = round % 2 === 0 ? ["generator", "client"] : ["client", "generator"];
    for (const side of sides) rates[side].push(rate(await all({ side, ms: timedMs })));
  }
  const stats = { calls: 0, failedCalls: 0, idsReceived: 0 };
  for (const answer of await all({})) for (const name of Object.keys(stats)) stats[name] += answer.stats[name];
  const ratios = rates.client.map((c, i) => c / rates.generator[i]);
  return {
    generator: median(rates.generator),
    client: median(rates.client),
    ratios: [Math.min(...ratios), Math.max(...ratios)],
    stats,
  };
}

async function main() {
  const options = args();
  let nodes = [];
  let endpoints = options.endpoints ? options.endpoints.split(",") : [];
  if (endpoints.length === 0) {
    const { Node } = await import("./test/snowidd.mjs");
    nodes = await Node.startAll(Array.from({ length: options.nodes }, (_, i) => ({ worker: i + 1, datacenter: 7 })));
    endpoints = nodes.map((node) => node.url);
  }
  const load = () => os.loadavg()[0].toFixed(1);
  const loadBefore = load();
  const rows = [];
  try {
    const common = { endpoints, warmupMs: options.warmup * 1000, timedMs: options.seconds * 1000,
      rounds: options.rounds };
    for (const threads of options.threads) rows.push({ threads, ...(await runThreads(threads, common)) });
  } finally {
    await Promise.all(nodes.map((node) => node.stop()));
  }
  const n = (x) => Math.round(x).toLocaleString("en-US");
  console.log(`Node.js ${process.version}, ${os.cpus()[0].model}, ${os.cpus().length} CPUs, ` +
    `load ${loadBefore} -> ${load()}; ${endpoints.length} node(s); ${options.warmup} s warm-up, then ` +
    `${options.rounds} rounds of ${options.seconds} s each side`);
  console.log("| threads | in-process generator, IDs/s | client, IDs/s | client / generator | per round | client calls | IDs per call | failed calls |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|");
  const f = (x) => x.toFixed(2);
  for (const r of rows) {
    console.log(`| ${r.threads} | ${n(r.generator)} | ${n(r.client)} | ${f(r.client / r.generator)} | ` +
      `${f(r.ratios[0])}–${f(r.ratios[1])} | ${n(r.stats.calls)} | ` +
      `${n(r.stats.idsReceived / Math.max(1, r.stats.calls - r.stats.failedCalls))} | ${n(r.stats.failedCalls)} |`);
  }
}

if (isMainThread) await main();
else await workerMain(workerData);
