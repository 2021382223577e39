// The client installed as npm installs it: `npm pack` gives a tarball that
// a fresh project outside the tree installs (offline), then uses with
// `import` and with `require`, drawing IDs from a live snowidd; index.d.ts
// checks with TypeScript both ways (from clients/node/examples, npm's).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";

import { CLIENT_DIR, freshProject, remove } from "./project.mjs";
import { Node } from "./snowidd.mjs";

const run = promisify(execFile);
const TSC = path.join(CLIENT_DIR, "examples/node_modules/typescript/bin/tsc");

let node;
let project;
before(async () => {
  project = freshProject();
  node = await Node.start({ worker: 11, datacenter: 5 });
});
after(async () => {
  await node?.stop();
  if (project) remove(project);
});

// Runs `source` as `name` in the fresh project; its standard output.
async function runInProject(name, source) {
  writeFileSync(path.join(project.dir, name), source);
  const { stdout } = await run(process.execPath, [name], {
    cwd: project.dir,
    env: { ...process.env, SNOWID_ENDPOINT: node.url },
    timeout: 30000,
  });
  return stdout;
}

// Three IDs, printed one a line, each checked to come from the live node.
function assertThreeIdsFromTheNode(stdout) {
  const ids = stdout.trim().split("\n").map(BigInt);
  assert.equal(ids.length, 3, stdout);
  assert.equal(new Set(ids).size, 3);
  for (const id of ids) assert.ok(id > 2n ** 53n, `${id}`);
}

test("npm pack ships the client, its types and its README, not its tests", () => {
  assert.deepEqual(project.files, [
    "README.md", "index.d.ts", "index.js", "index.mjs", "lib/answer.js", "lib/backoff.js", "lib/business.js",
    "lib/client.js",
    "lib/errors.js", "lib/id_buffer.js", "lib/layout.js", "lib/options.js", "lib/transport.js", "package.json",
  ]);
  assert.ok(existsSync(path.join(project.dir, "node_modules/snowid-client/index.mjs")));
});

test("a fresh project imports it as an ES module and draws IDs", async () => {
  assertThreeIdsFromTheNode(await runInProject("esm.mjs", `
    import { Client } from "snowid-client";
    const client = new Client({ endpoints: [process.env.SNOWID_ENDPOINT] });
    for (const id of await client.nextMany(3)) console.log(String(id));
    await client.close();
  `));
});

test("a fresh project requires it as CommonJS and draws IDs", async () => {
  assertThreeIdsFromTheNode(await runInProject("cjs.cjs", `
    const { Client } = require("snowid-client");
    const client = new Client({ endpoints: [process.env.SNOWID_ENDPOINT] });
    client.nextMany(3).then(async (ids) => {
      for (const id of ids) console.log(String(id));
      await client.close();
    });
  `));
});

test("import and require give the very same objects", async () => {
  const out = await runInProject("both.mjs", `
    import { createRequire } from "node:module";
    import * as imported from "snowid-client";
    const required = createRequire(import.meta.url)("snowid-client");
    const names = ["Client", "SnowidError", "decodeId", "layoutFromInfo", "DEFAULTS"];
    console.log(names.every((name) => imported[name] === required[name] && imported[name] !== undefined));
  `);
  assert.equal(out.trim(), "true");
});

test("index.d.ts checks with TypeScript from an ES module and from CommonJS", { skip: !existsSync(TSC) && "no TypeScript in clients/node/examples" }, async () => {
  const typed = (load) => `
    ${load}
    const options: ClientOptions = { endpoints: ["http://127.0.0.1:1"], startWaitMs: 100, emptyWaitMs: 0 };
    const client: Client = new Client(options);
    const id: Promise<bigint> = client.next();
    const fast: bigint | undefined = client.tryNext();
    const stats: ClientStats = client.stats();
    const counts: number[] = [stats.calls, stats.failedCalls, stats.invalidAnswers, stats.idsReceived,
      stats.idsServed, stats.idsExpired];
    const code: "invalid_argument" | "not_found" | "failed_precondition" | "unavailable" =
      new SnowidError().code;
    const orders: Promise<string[]> = client.nextBusiness("orders", 10);
    // @ts-expect-error: a duration's name carries its unit
    new Client({ endpoints: [], maxAge: 1 });
    // @ts-expect-error: an ID is a BigInt, never a Number
    const rounded: number = fast;
    export { id, counts, code, orders, rounded };
  `;
  writeFileSync(path.join(project.dir, "typed.mts"), typed(
    `import { Client, SnowidError, type ClientOptions, type ClientStats } from "snowid-client";`));
  writeFileSync(path.join(project.dir, "typed.cts"), typed(`import snowid = require("snowid-client");
    import Client = snowid.Client;
    import SnowidError = snowid.SnowidError;
    type ClientOptions = snowid.ClientOptions;
    type ClientStats = snowid.ClientStats;`));
  writeFileSync(path.join(project.dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: { module: "nodenext", moduleResolution: "nodenext", target: "es2022", strict: true, noEmit: true,
      lib: ["es2022"], types: [] },
    files: ["typed.mts", "typed.cts"],
  }));
  const { stdout } = await run(process.execPath, [TSC, "-p", project.dir], { timeout: 60000 }).catch((error) => {
    assert.fail(`tsc: ${error.stdout}${error.stderr}`);
  });
  assert.equal(stdout, "");
});
