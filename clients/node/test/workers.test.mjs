// Worker threads, each with a client of its own (a Client belongs to one
// thread): 4 threads draw 200,000 IDs each from two live nodes at once, and
// no ID is handed out twice across them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";

import { Client } from "../index.mjs";

const THREADS = 4;
const PER_THREAD = 200_000;

if (!isMainThread) {
  // Six busy threads on two cores (four here, two snowidd), and other tests'
  // load: a refill may take longer than the default deadline (500 ms) and
  // empty wait (200 ms), which is not what this test is about.
  const client = new Client({
    endpoints: workerData.endpoints,
    agent: "node-worker",
    callDeadlineMs: 3000,
    emptyWaitMs: 5000,
  });
  const ids = new BigInt64Array(PER_THREAD);
  for (let i = 0; i < PER_THREAD; i++) ids[i] = await client.next();
  await client.close();
  parentPort.postMessage(ids, [ids.buffer]);
} else {
  const { Node } = await import("./snowidd.mjs");
  test(`${THREADS} worker threads with a client each: ${THREADS * PER_THREAD} distinct IDs`, async () => {
    const nodes = await Node.startAll([{ worker: 1, datacenter: 4 }, { worker: 2, datacenter: 4 }]);
    try {
      const endpoints = nodes.map((node) => node.url);
      const runs = Array.from({ length: THREADS }, () => {
        const worker = new Worker(new URL(import.meta.url), { workerData: { endpoints } });
        return new Promise((resolve, reject) => worker.once("message", resolve).once("error", reject));
      });
      const all = new BigInt64Array(THREADS * PER_THREAD);
      (await Promise.all(runs)).forEach((ids, i) => all.set(ids, i * PER_THREAD));
      all.sort();
      for (let i = 1; i < all.length; i++) {
        if (all[i] === all[i - 1]) assert.fail(`ID ${all[i]} handed out twice`);
      }
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  });
}
