// Every JavaScript block of clients/node/README.md and of docs/clients.md
// (```js: all of them are Node.js's) is run as a user would paste it: in a
// fresh project that installed the packed client (test/project.mjs),
// against two live nodes that stand in for the blocks' example endpoints
// (http://10.0.0.1:8080 or http://127.0.0.1:8080 for the first,
// http://10.0.0.2:8080 or http://127.0.0.1:8081 for the second; a block
// that names any other fails), as an ES module, or as CommonJS when it
// calls require().
// The Knex block (docs/clients.md) runs against DATABASE_URL, the
// PostgreSQL that test.sh starts (clients/testing/postgres.sh), with
// clients/node/examples' npm packages; its rows are then read back and
// checked: one per ID, each ID from one of the two nodes.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { decodeId, layoutFromInfo } from "../index.mjs";
import { CLIENT_DIR, freshProject, remove } from "./project.mjs";
import { Node, httpGet } from "./snowidd.mjs";

const run = promisify(execFile);
const EXAMPLES = path.join(CLIENT_DIR, "examples");
const PAGES = {
  "clients/node/README.md": path.join(CLIENT_DIR, "README.md"),
  "docs/clients.md": path.join(CLIENT_DIR, "../../docs/clients.md"),
};
// The example endpoints, and the node (index) each stands for.
const STAND_INS = [
  ["http://10.0.0.1:8080", 0], ["http://127.0.0.1:8080", 0],
  ["http://10.0.0.2:8080", 1], ["http://127.0.0.1:8081", 1],
];

// The fenced blocks of `file` in JavaScript: { line, code }.
function javascriptBlocks(file) {
  const found = [];
  let open = null;
  readFileSync(file, "utf8").split("\n").forEach((line, index) => {
    if (open === null) {
      const fence = /^```(\w*)\s*$/.exec(line);
      if (fence) open = { language: fence[1], line: index + 1, lines: [] };
    } else if (/^```\s*$/.test(line)) {
      if (["js", "javascript", "mjs", "cjs"].includes(open.language)) {
        found.push({ line: open.line, code: open.lines.join("\n") });
      }
      open = null;
    } else {
      open.lines.push(line);
    }
  });
  return found;
}

let nodes;
let project;
before(async () => {
  project = freshProject();
  nodes = await Node.startAll([21, 22].map((worker) =>
    ({ worker, datacenter: 3, extra: ["--segment-auto-create", "true"] })));
  // The examples' packages beside the packed client, as a user's project has them.
  for (const name of ["knex", "pg"]) {
    const link = path.join(project.dir, "node_modules", name);
    if (!existsSync(link)) symlinkSync(path.join(EXAMPLES, "node_modules", name), link);
  }
});
after(async () => {
  await Promise.all((nodes ?? []).map((node) => node.stop()));
  if (project) remove(project);
});

// Runs a block in the project; its standard output.
async function runBlock(name, block) {
  let code = block.code;
  for (const [url, index] of STAND_INS) code = code.replaceAll(url, nodes[index].url);
  for (const [url] of code.matchAll(/https?:\/\/[^\s"'`]+/g)) {
    assert.ok(nodes.some((node) => node.url === url), `the block names an endpoint the test has no node for: ${url}`);
  }
  // The side-by-side blocks of docs/clients.md take their token from the page.
  if (/\btoken\b/.test(code) && !/\b(const|let|var) token\b/.test(code)) code = `const token = "";\n${code}`;
  const file = `${name}.${/\brequire\(/.test(code) ? "cjs" : "mjs"}`;
  writeFileSync(path.join(project.dir, file), code);
  try {
    const { stdout } = await run(process.execPath, [file], { cwd: project.dir, timeout: 30000 });
    return stdout;
  } catch (error) {
    assert.fail(`${file} failed:\n${error.stdout}${error.stderr}\n--- the block:\n${code}`);
  }
}

// The nodes' layout, read from the first.
async function layout() {
  return layoutFromInfo(JSON.parse((await httpGet(`${nodes[0].url}/v1/info`)).body));
}

for (const [page, file] of Object.entries(PAGES)) {
  describe(page, () => {
    const blocks = javascriptBlocks(file);
    test("has JavaScript blocks to run", () => {
      assert.ok(blocks.length >= 2, `${blocks.length} blocks`);
    });
    for (const block of blocks) {
      const name = `${path.basename(path.dirname(file))}-${path.basename(file, ".md")}-${block.line}`;
      if (/from "knex"/.test(block.code)) {
        test(`the Knex block at line ${block.line} inserts rows keyed by snowid IDs`, async () => {
          assert.ok(process.env.DATABASE_URL, "DATABASE_URL: run through test.sh, which starts PostgreSQL");
          const stdout = await runBlock(name, block);
          const knex = createRequire(path.join(EXAMPLES, "package.json"))("knex");
          const db = knex({ client: "pg", connection: process.env.DATABASE_URL });
          try {
            const rows = await db("orders").select("id", "item").orderBy("id");
            assert.equal(rows.length, 3);
            const ids = rows.map((row) => BigInt(row.id));
            assert.equal(new Set(ids).size, 3);
            const workers = new Set(nodes.map((node) => node.worker));
            const theLayout = await layout();
            for (const id of ids) assert.ok(workers.has(decodeId(theLayout, id).worker), `${id}`);
            // What the block printed is what the table holds.
            for (const row of rows) assert.ok(stdout.includes(`${row.id} ${row.item}`), stdout);
          } finally {
            await db.destroy();
          }
        });
      } else {
        test(`the block at line ${block.line} runs against live nodes`, async () => {
          await runBlock(name, block);
        });
      }
    }
  });
}
