// Test support: the hostile stand-in for a node that every client is
// tested against (tests/support/hostile_node.py, its modes in its
// docstring), run by $PYTHON and stopped by pid.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { httpGet } from "./snowidd.mjs";

const SCRIPT = fileURLToPath(new URL("../../../tests/support/hostile_node.py", import.meta.url));
// Debian's interpreter unless PYTHON names another: a python3 first on PATH
// may be a version manager's shim, which takes seconds to start 23 nodes.
const PYTHON = process.env.PYTHON ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3");

export class HostileNode {
  // Starts hostile_node.py in `mode`; resolves once it printed its port.
  static start(mode) {
    const child = spawn(PYTHON, [SCRIPT, mode, "--lifetime", "300"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    return new Promise((resolve, reject) => {
      let out = "";
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk) => {
        out += chunk;
        const line = /^(\d+)\n/.exec(out);
        if (line) resolve(new HostileNode(mode, child, exited, Number(line[1])));
      });
      child.on("error", reject);
      exited.then((code) => reject(new Error(`${path.basename(SCRIPT)} ${mode} exited (${code}): ${out}`)));
    });
  }

  constructor(mode, child, exited, port) {
    this.mode = mode;
    this.child = child;
    this.exited = exited;
    this.url = `http://127.0.0.1:${port}`;
  }

  // GET /hostile/stats: { mode, id_requests, info_requests }.
  async stats() {
    return JSON.parse((await httpGet(`${this.url}/hostile/stats`)).body);
  }

  // SIGTERM by pid; resolves when the process is gone.
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.child.pid, "SIGTERM");
    await this.exited;
  }
}
