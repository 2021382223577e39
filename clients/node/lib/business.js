"use strict";
// What the client takes from a node for business IDs (GET
// /v1/business/{tag}?count=N: a tag's numbers formatted by its template,
// e.g. "ORD-20261202-000001"): the answer to a request for N of tag T is
// taken only if its Content-Type is application/json and its body at most
// businessLimit(N, T) bytes of valid UTF-8, one JSON object of exactly two
// members, "tag" (T) and "ids", an array of exactly N strings, each 1 to
// 256 bytes of UTF-8 without control characters or lone surrogates, no two
// alike. Anything else is refused whole (an InvalidAnswer naming the call).
//
// parseBusinessBatch() is pure.
const { InvalidAnswer } = require("./transport.js");

// The longest business ID, in bytes of UTF-8.
const BUSINESS_ID_LIMIT = 256;
const JSON_TYPE = "application/json";
const CONTROL = /\p{Cc}/u;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UTF8 = new TextDecoder("utf-8", { fatal: true });

// The most bytes an answer of `count` business IDs of `tag` can take: each
// ID at most 256 bytes, each escaped as \uXXXX at worst (6 bytes), with its
// quotes and comma; the tag likewise; 64 for the rest.
function businessLimit(count, tag) {
  return count * (6 * BUSINESS_ID_LIMIT + 3) + 6 * Buffer.byteLength(tag, "utf8") + 64;
}

// The IDs (an array of strings) of an answer to a request for `count` IDs
// of `tag`; throws an Error saying what is wrong otherwise.
function parseBusinessBatch(bytes, contentType, tag, count) {
  const type = String(contentType ?? "").split(";")[0].trim().toLowerCase();
  if (type !== JSON_TYPE) throw new Error(`Content-Type '${contentType}', not ${JSON_TYPE}`);
  let answer;
  try {
    answer = JSON.parse(UTF8.decode(bytes));
  } catch {
    throw new Error("the answer is not JSON in UTF-8");
  }
  const keys = answer !== null && typeof answer === "object" && !Array.isArray(answer) ? Object.keys(answer) : [];
  if (keys.length !== 2 || !keys.includes("tag") || !keys.includes("ids")) {
    throw new Error('the answer is not a JSON object of "tag" and "ids" alone');
  }
  if (answer.tag !== tag) throw new Error(`the answer is for tag ${JSON.stringify(answer.tag)}, not '${tag}'`);
  const ids = answer.ids;
  if (!Array.isArray(ids) || ids.length !== count) {
    throw new Error(`the answer holds no array of exactly ${count} IDs`);
  }
  const seen = new Set();
  for (const id of ids) {
    if (typeof id !== "string" || id === "") throw new Error(`ID ${JSON.stringify(id)} is not a non-empty string`);
    if (LONE_SURROGATE.test(id)) throw new Error(`ID ${JSON.stringify(id)} is not valid Unicode`);
    const size = Buffer.byteLength(id, "utf8");
    if (size > BUSINESS_ID_LIMIT) throw new Error(`an ID of ${size} bytes, above ${BUSINESS_ID_LIMIT}`);
    if (CONTROL.test(id)) throw new Error(`ID ${JSON.stringify(id)} holds a control character`);
    if (seen.has(id)) throw new Error(`ID ${JSON.stringify(id)} appears twice in the batch`);
    seen.add(id);
  }
  return ids;
}

// `count` business IDs of `tag` from `node` (the client's { endpoint }),
// as parseBusinessBatch takes them; an InvalidAnswer naming the call for
// any other 200 answer. `path` is the call's, percent-encoded.
async function fetchBusiness(node, path, tag, count) {
  const { bytes, contentType } = await node.endpoint.get(path, businessLimit(count, tag));
  try {
    return parseBusinessBatch(bytes, contentType, tag, count);
  } catch (error) {
    throw new InvalidAnswer(`${node.endpoint.base}${path}: ${error.message}`);
  }
}

module.exports = { BUSINESS_ID_LIMIT, businessLimit, fetchBusiness, parseBusinessBatch };
