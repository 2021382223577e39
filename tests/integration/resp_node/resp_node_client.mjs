// Calls snowidd's RESP listener with the two Node.js Redis clients, ioredis
// and node-redis (npm's `redis`, over RESP2 and over RESP3 after HELLO 3), and
// prints what each got as one JSON object. Every reply is printed as
// String(value), whatever type the client made of it: an ID the client read
// into a double prints rounded, and the caller finds it wrong.
//
//   node resp_node_client.mjs PORT
import Redis from "ioredis";
import { createClient } from "redis";

const port = Number(process.argv[2]);
const text = (value) => (Array.isArray(value) ? value.map(text) : String(value));
// ioredis answers a pipeline or a transaction with [error, reply] pairs.
const pairs = (replies) => replies.map(([error, reply]) => (error ? `error: ${error.message}` : text(reply)));
// A step's result, or "error: …" if it threw: one refusal does not hide the other steps.
async function attempt(step) {
  try {
    return await step();
  } catch (error) {
    return `error: ${error.message}`;
  }
}

async function withIoredis() {
  const client = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: 1, connectionName: "ioredis" });
  const out = {};
  out.id = await attempt(async () => text(await client.call("SNOWID.ID")));
  out.id_type = await attempt(async () => typeof (await client.call("SNOWID.ID")));
  out.ids = await attempt(async () => text(await client.call("SNOWID.IDS", 1000)));
  out.pipeline = await attempt(async () => pairs(await client.pipeline().call("SNOWID.IDS", 2).call("SNOWID.ID").exec()));
  out.multi = await attempt(async () => pairs(await client.multi().incr("js-orders").incr("js-orders").call("SNOWID.IDS", 2).exec()));
  out.incr_after = await attempt(async () => text(await client.incr("js-orders")));
  out.aborted = await attempt(async () => text(await client.multi().incr("js-orders").get("js-orders").exec()));
  out.incr_after_abort = await attempt(async () => text(await client.incr("js-orders")));
  out.exists = await attempt(async () => text(await client.exists("js-orders", "js-never")));
  client.disconnect();
  return out;
}

async function withNodeRedis(resp) {
  const client = createClient({ socket: { host: "127.0.0.1", port }, RESP: resp, name: "noderedis" });
  client.on("error", (error) => console.error(`node-redis: ${error.message}`));
  await client.connect();
  const out = {};
  out.id = await attempt(async () => text(await client.sendCommand(["SNOWID.ID"])));
  out.ids = await attempt(async () => text(await client.sendCommand(["SNOWID.IDS", "1000"])));
  out.pipeline = await attempt(async () =>
    text(await client.multi().addCommand(["SNOWID.IDS", "2"]).addCommand(["SNOWID.ID"]).execAsPipeline()),
  );
  out.multi = await attempt(async () => text(await client.multi().incr("js-orders").incr("js-orders").exec()));
  out.incr_after = await attempt(async () => text(await client.incr("js-orders")));
  client.destroy();
  return out;
}

const out = {
  ioredis: await withIoredis(),
  node_redis: await withNodeRedis(2),
  node_redis_resp3: await withNodeRedis(3),
};
console.log(JSON.stringify(out));
