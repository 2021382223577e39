// Business IDs (nextBusiness) against two real snowidd nodes that share
// one SQLite segment store and a tokens file, and against a hostile
// stand-in for a node (node:http, in this process: tests/support/
// hostile_node.py answers only /v1/ids and /v1/segment) whose every bad
// answer is refused, counted and named by endpoint while the call goes to
// the next endpoint.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";

import { Client } from "../index.mjs";
import { parseBusinessBatch } from "../lib/business.js";
import { Node, rejection } from "./snowidd.mjs";

const TOKENS = `[[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["js-orders", "js retired", "js-never"]
`;
const WELL_FORMED = /^ORD-\d{8}-\d{6}$/;
const PATIENT = { callDeadlineMs: 3000 };

async function administer(node, method, route, body) {
  const answer = await fetch(`${node.url}${route}`, {
    method,
    headers: { authorization: "Bearer ops-secret", "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.ok(answer.ok, `${method} ${route}: HTTP ${answer.status} ${await answer.text()}`);
}

async function withClient(options, body) {
  const client = new Client({ ...PATIENT, ...options });
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

describe("business IDs against nodes", () => {
  let dir;
  let nodes;
  let urls;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "snowid-node-business-"));
    const tokens = path.join(dir, "tokens.toml");
    writeFileSync(tokens, TOKENS);
    const extra = ["--segment-store", `sqlite://${path.join(dir, "segments.db")}`, "--tokens-file", tokens];
    nodes = await Node.startAll([{ worker: 7, datacenter: 2, extra }, { worker: 8, datacenter: 2, extra }]);
    urls = nodes.map((node) => node.url);
    for (const tag of ["js-orders", "js retired"]) {
      await administer(nodes[0], "POST", "/v1/tags", { tag, step: 100, template: "ORD-{yyyyMMdd}-{seq:06}", zone: "UTC" });
    }
    await administer(nodes[0], "DELETE", "/v1/tags/js%20retired");
  });
  after(async () => {
    await Promise.all((nodes ?? []).map((node) => node.stop()));
    rmSync(dir, { recursive: true, force: true });
  });

  test("IDs are well formed and two calls never repeat one", async () => {
    await withClient({ endpoints: urls, bearerToken: "orders-secret" }, async (client) => {
      const seen = new Set();
      for (const count of [1, 7, 50, 1, 100]) {
        const ids = await client.nextBusiness("js-orders", count);
        assert.equal(ids.length, count);
        for (const id of ids) {
          assert.match(id, WELL_FORMED);
          assert.ok(!seen.has(id), `${id} handed out twice`);
          seen.add(id);
        }
      }
      assert.equal((await client.nextBusiness("js-orders")).length, 1);
    });
  });

  test("a retired tag is failed_precondition naming it, at once", async () => {
    await withClient({ endpoints: urls, bearerToken: "orders-secret" }, async (client) => {
      const started = performance.now();
      const error = await rejection(client.nextBusiness("js retired", 3));
      assert.equal(error.code, "failed_precondition");
      assert.equal(error.httpStatus, 409);
      assert.match(error.message, /'js retired' is retired/);
      assert.ok(performance.now() - started < 2000);
    });
  });

  test("a wrong token is refused", async () => {
    for (const bearerToken of ["", "wrong"]) {
      await withClient({ endpoints: urls, bearerToken }, async (client) => {
        const error = await rejection(client.nextBusiness("js-orders", 2));
        assert.equal(error.code, "invalid_argument");
        assert.equal(error.httpStatus, 401);
      });
    }
  });

  test("an unknown tag is not_found; bad arguments are refused here", async () => {
    await withClient({ endpoints: urls, bearerToken: "orders-secret" }, async (client) => {
      assert.equal((await rejection(client.nextBusiness("js-never"))).code, "not_found");
      for (const [tag, count] of [["", 1], ["js-orders", 0], ["js-orders", 1.5], [7, 1]]) {
        assert.equal((await rejection(client.nextBusiness(tag, count))).code, "invalid_argument");
      }
    });
  });

  test("a 503 goes to the next endpoint", async () => {
    const down = await hostileBusinessNode("unavailable");
    try {
      await withClient({ endpoints: [down.url, urls[0]], bearerToken: "orders-secret" }, async (client) => {
        for (let i = 0; i < 50 && client.stats().failedCalls === 0; i++) {
          assert.equal((await client.nextBusiness("js-orders", 2)).length, 2);
        }
        assert.ok(client.stats().failedCalls >= 1, "the 503 was never met");
        assert.equal(client.stats().invalidAnswers, 0);
      });
    } finally {
      down.close();
    }
  });
});

// The business answers of the stand-in that no node could have sent.
const BAD_MODES = ["numbers", "too_few", "too_many", "duplicates", "blank", "control", "too_long",
  "other_tag", "extra_member", "single_id", "html", "wrong_type", "not_utf8", "lone_surrogate"];

// A stand-in node answering GET /v1/business/{tag}?count=N as `mode` says
// (anything else 404); resolves to { url, close }.
async function hostileBusinessNode(mode) {
  const server = http.createServer((request, response) => {
    const url = new URL(request.url, "http://x");
    if (!url.pathname.startsWith("/v1/business/")) {
      response.writeHead(404, { "content-type": "application/json" });
      return response.end('{"error": "not here"}');
    }
    const tag = decodeURIComponent(url.pathname.slice("/v1/business/".length));
    const count = Number(url.searchParams.get("count"));
    const ids = Array.from({ length: count }, (_, i) => `ORD-${String(i + 1).padStart(6, "0")}`);
    let answer = { tag, ids };
    let type = "application/json";
    let body;
    switch (mode) {
      case "numbers": ids[0] = 1; break;
      case "too_few": ids.pop(); break;
      case "too_many": ids.push("ORD-X"); break;
      case "duplicates": ids[ids.length - 1] = ids[0]; break;
      case "blank": ids[0] = ""; break;
      case "control": ids[0] = "ORD-\n1"; break;
      case "too_long": ids[0] = "O".repeat(257); break;
      case "other_tag": answer.tag = `${tag}-other`; break;
      case "extra_member": answer.id = ids[0]; break;
      case "single_id": answer = { tag, id: ids[0] }; break;
      case "html": type = "text/html"; body = "<html><body>ORD-000001</body></html>"; break;
      case "wrong_type": type = "text/plain"; break;
      case "not_utf8": body = Buffer.concat([Buffer.from(`{"tag":${JSON.stringify(tag)},"ids":["ORD-`), Buffer.from([0xff]), Buffer.from('"]}')]); break;
      case "lone_surrogate": body = `{"tag":${JSON.stringify(tag)},"ids":["ORD-\\ud800"]}`; break;
      case "unavailable":
        response.writeHead(503, { "content-type": type });
        return response.end('{"error": "the segment store is unreachable"}');
    }
    response.writeHead(200, { "content-type": type });
    response.end(body ?? JSON.stringify(answer));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe("business IDs against a hostile node", () => {
  for (const mode of BAD_MODES) {
    test(`${mode}: refused, counted, the node named`, async () => {
      const hostile = await hostileBusinessNode(mode);
      try {
        await withClient({ endpoints: [hostile.url] }, async (client) => {
          const count = mode === "not_utf8" || mode === "lone_surrogate" ? 1 : 3;
          const error = await rejection(client.nextBusiness("orders", count));
          assert.equal(error.code, "unavailable");
          assert.ok(error.message.includes(hostile.url), error.message);
          assert.equal(client.stats().invalidAnswers, 1);
        });
      } finally {
        hostile.close();
      }
    });
  }

  test("the stand-in's valid answer is taken", async () => {
    const valid = await hostileBusinessNode("valid");
    try {
      await withClient({ endpoints: [valid.url] }, async (client) => {
        assert.deepEqual(await client.nextBusiness("a/b c", 3), ["ORD-000001", "ORD-000002", "ORD-000003"]);
      });
    } finally {
      valid.close();
    }
  });

  test("a bad node is backed off and the call fails over", async () => {
    const [bad, good] = await Promise.all([hostileBusinessNode("duplicates"), hostileBusinessNode("valid")]);
    try {
      const options = { endpoints: [bad.url, good.url], backoffInitialMs: 5000, backoffMaxMs: 5000 };
      await withClient(options, async (client) => {
        for (let i = 0; i < 20; i++) assert.equal((await client.nextBusiness("orders", 2)).length, 2);
        assert.ok(client.stats().invalidAnswers <= 1);
      });
    } finally {
      bad.close();
      good.close();
    }
  });

  test("parseBusinessBatch takes exactly the rule", () => {
    const bytes = (text) => new Uint8Array(Buffer.from(text));
    assert.deepEqual(parseBusinessBatch(bytes('{"ids":["a","b"],"tag":"t"}'), "application/json; charset=utf-8", "t", 2), ["a", "b"]);
    assert.throws(() => parseBusinessBatch(bytes('{"tag":"t","ids":["a","\\u0085"]}'), "application/json", "t", 2), /control/);
    assert.throws(() => parseBusinessBatch(bytes("[]"), "application/json", "t", 0), /alone/);
    assert.throws(() => parseBusinessBatch(bytes("null"), "application/json", "t", 1), /alone/);
  });
});
