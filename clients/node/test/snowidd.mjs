// Test support: real snowidd nodes on free loopback ports, each with a
// fresh state directory, started from $SNOWIDD and stopped by pid; and
// rejection(), the error a promise rejects with.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";

export const SNOWIDD = process.env.SNOWIDD;
if (!SNOWIDD) throw new Error("set SNOWIDD to the snowidd binary");

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Resolves to the error `promise` rejects with; fails if it resolves.
export async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
}

// GET `url` on a fresh connection: { status, body (text) }.
export function httpGet(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers, agent: false }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode, body }));
    });
    request.on("error", reject);
    request.setTimeout(2000, () => request.destroy(new Error(`${url}: timed out`)));
  });
}

export class Node {
  // Starts snowidd with `--worker-id`/`--datacenter-id` and `extra` flags;
  // resolves once its /readyz answers 200.
  static async start({ worker, datacenter, extra = [] }) {
    const dir = mkdtempSync(path.join(tmpdir(), "snowid-node-client-"));
    const args = ["--http", "127.0.0.1:0", "--grpc", "off", "--state-dir", dir, "--worker-id",
      String(worker), "--datacenter-id", String(datacenter), "--log-level", "info", ...extra];
    const child = spawn(SNOWIDD, args, { stdio: ["ignore", "pipe", "pipe"] });
    const node = new Node(child, dir, worker, datacenter);
    await node.#ready();
    return node;
  }

  // Starts a node per spec at once; if one does not start, stops those
  // that did and throws its error.
  static async startAll(specs) {
    const started = await Promise.allSettled(specs.map((spec) => Node.start(spec)));
    const nodes = started.filter((r) => r.status === "fulfilled").map((r) => r.value);
    const failed = started.find((r) => r.status === "rejected");
    if (failed === undefined) return nodes;
    await Promise.all(nodes.map((node) => node.stop()));
    throw failed.reason;
  }

  constructor(child, dir, worker, datacenter) {
    this.child = child;
    this.dir = dir;
    this.worker = worker;
    this.datacenter = datacenter;
    this.log = "";
    this.exited = new Promise((resolve) => child.on("exit", resolve));
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding("utf8");
      stream.on("data", (chunk) => (this.log += chunk));
    }
  }

  get url() {
    return `http://127.0.0.1:${this.port}`;
  }

  async #ready() {
    const until = Date.now() + 15000;
    while (this.port === undefined) {
      const match = /, http 127\.0\.0\.1:(\d+)/.exec(this.log) ?? /\bhttp 127\.0\.0\.1:(\d+)/.exec(this.log);
      if (match) this.port = Number(match[1]);
      else if (this.child.exitCode !== null || Date.now() > until) throw this.#failure("no port");
      else await sleep(10);
    }
    while ((await httpGet(`${this.url}/readyz`).catch(() => ({ status: 0 }))).status !== 200) {
      if (this.child.exitCode !== null || Date.now() > until) throw this.#failure("not ready");
      await sleep(10);
    }
  }

  #failure(what) {
    this.child.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
    return new Error(`snowidd ${what}; its log:\n${this.log}`);
  }

  // SIGKILL by pid; resolves when the process is gone.
  async kill() {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.child.pid, "SIGKILL");
    await this.exited;
  }

  async stop() {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// A loopback URL where nothing listens: a port bound and let go.
export function deadEndpoint() {
  return new Promise((resolve) => {
    const server = http.createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(`http://127.0.0.1:${port}`));
    });
  });
}
