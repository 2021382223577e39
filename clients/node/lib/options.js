"use strict";
// The client's options: their defaults and their validation.
//
// Names are the C++ ClientOptions' (include/snowid/client.h) in camelCase;
// durations carry their unit in the name (Ms), as JavaScript has no
// duration type. Pure functions, no state.
const { invalidArgument } = require("./errors.js");

const DEFAULTS = Object.freeze({
  endpoints: [], // base URLs of snowidd's HTTP listeners, "http://10.0.0.1:8080"
  bearerToken: "", // sent as "Authorization: Bearer <token>" when not empty
  agent: "", // X-Snowid-Agent: [a-zA-Z][a-zA-Z0-9-]*, at most 64 characters
  ca: undefined, // https endpoints: trusted CA certificates (PEM), else Node's
  callDeadlineMs: 500, // deadline of every HTTP call to a node
  emptyWaitMs: 200, // longest wait of next() on an empty buffer
  startWaitMs: 2000, // ...until the buffer's first batch has arrived
  lowWater: 0.5, // refill when fewer than this fraction of a batch is left, (0, 1]
  initialBatch: 1000, // IDs per refill at first
  maxBatch: 10000, // IDs per refill at most: snowidd's HTTP max_batch default
  refillPeriodMs: 500, // batches adapt so that refills come about this often
  maxAgeMs: 10000, // buffered Snowflake IDs older than this are dropped
  backoffInitialMs: 100, // a failed endpoint is skipped this long at first,
  backoffMaxMs: 5000, // doubling per further failure up to this
});

// The most IDs one refill may ask for (snowidd's own limit on max_batch).
const MAX_BATCH_LIMIT = 1_000_000;
const AGENT = /^[a-zA-Z][a-zA-Z0-9-]{0,63}$/;

// The longest duration a timer takes (2^31 - 1 ms, about 24.8 days).
const LONGEST_MS = 2 ** 31 - 1;

// Throws invalid_argument unless option `name` is a number of ms in
// [least, LONGEST_MS].
function checkDuration(o, name, least) {
  const value = o[name];
  if (!(typeof value === "number" && value >= least && value <= LONGEST_MS)) {
    throw invalidArgument(`${name}: ${value} is not a number of ms in [${least}, ${LONGEST_MS}]`);
  }
}

function checkEndpoint(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    throw invalidArgument(`endpoints: '${text}' is not a URL like http://127.0.0.1:8080`);
  }
  // An empty "?" or "#" leaves url.search and url.hash empty but stays in
  // url.href, where it would take in every path the client appends.
  if ((url.protocol !== "http:" && url.protocol !== "https:") || /[?#]/.test(url.href)) {
    throw invalidArgument(`endpoints: '${text}' is not an http:// or https:// base URL`);
  }
  if (url.username || url.password) {
    throw invalidArgument(`endpoints: '${text}' holds credentials; use bearerToken`);
  }
  return url.href.replace(/\/+$/, "");
}

// Each check throws invalid_argument naming its option.
const CHECKS = [
  (o) => {
    if (!Array.isArray(o.endpoints) || o.endpoints.length === 0) {
      throw invalidArgument("endpoints: at least one is needed");
    }
  },
  (o) => {
    if (typeof o.agent !== "string" || (o.agent !== "" && !AGENT.test(o.agent))) {
      throw invalidArgument(
        `agent: '${o.agent}' is not [a-zA-Z][a-zA-Z0-9-]* of at most 64 characters`,
      );
    }
  },
  (o) => {
    if (typeof o.bearerToken !== "string" || /[\r\n]/.test(o.bearerToken)) {
      throw invalidArgument("bearerToken: must be a string without line breaks");
    }
  },
  (o) => checkDuration(o, "callDeadlineMs", 1),
  (o) => checkDuration(o, "emptyWaitMs", 0),
  (o) => checkDuration(o, "startWaitMs", 0),
  (o) => {
    if (!(typeof o.lowWater === "number" && o.lowWater > 0 && o.lowWater <= 1)) {
      throw invalidArgument(`lowWater: ${o.lowWater} is not in (0, 1]`);
    }
  },
  (o) => {
    if (!Number.isInteger(o.initialBatch) || o.initialBatch < 1) {
      throw invalidArgument("initialBatch: must be an integer of at least 1");
    }
  },
  (o) => {
    if (!Number.isInteger(o.maxBatch) || o.maxBatch < o.initialBatch || o.maxBatch > MAX_BATCH_LIMIT) {
      throw invalidArgument(
        `maxBatch: ${o.maxBatch} is not in [initialBatch (${o.initialBatch}), ${MAX_BATCH_LIMIT}]`,
      );
    }
  },
  (o) => checkDuration(o, "refillPeriodMs", 1),
  (o) => checkDuration(o, "maxAgeMs", 10),
  (o) => checkDuration(o, "backoffInitialMs", 1),
  (o) => checkDuration(o, "backoffMaxMs", o.backoffInitialMs),
];

// The options with the defaults filled in and the endpoints normalised
// (no trailing slash); throws a SnowidError (invalid_argument) naming the
// first bad or unknown option.
function resolveOptions(options) {
  if (options === null || typeof options !== "object") {
    throw invalidArgument("options: an object with at least `endpoints` is needed");
  }
  for (const name of Object.keys(options)) {
    if (!(name in DEFAULTS)) throw invalidArgument(`${name}: no such option`);
  }
  const resolved = { ...DEFAULTS };
  for (const [name, value] of Object.entries(options)) {
    if (value !== undefined) resolved[name] = value;
  }
  for (const check of CHECKS) check(resolved);
  resolved.endpoints = resolved.endpoints.map((endpoint) => checkEndpoint(String(endpoint)));
  return Object.freeze(resolved);
}

module.exports = { DEFAULTS, resolveOptions };
