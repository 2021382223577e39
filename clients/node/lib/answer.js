// What the client takes from a node: the rule of docs/clients.md, "What a
// client accepts", for answers to GET /v1/ids and GET /v1/segment/{tag}.
//
// A batch of N asked for is taken only if its body is at most bodyLimit(N)
// bytes (transport.js stops reading there), one JSON object whose "ids" is
// an array of 1 to N JSON strings, each plain ASCII decimal digits (no
// sign, space, leading zero but "0" itself, underscore or other digits)
// below 2^63, strictly increasing, and the first above the last ID of the
// batch before with the same Snowid-Issuer from the same endpoint and tag
// (Watermarks). Anything else is refused whole (an InvalidAnswer): the
// client discards the batch and counts it. BigInt() alone would take
// "0x10", " 12 " and "" (as 0n): the pattern is checked first.
//
// parseBatch() is pure; a Watermarks belongs to one endpoint of one client.
import { InvalidAnswer } from "./transport.js";

// Plain decimal digits, at most 19 (2^63 has 19; the value is checked too).
const DECIMAL = /^(?:0|[1-9][0-9]{0,18})$/;
const ID_LIMIT = 2n ** 63n;
// Issuers remembered per tag and endpoint: a proxy fronts a few nodes, a
// node that draws a new token per answer does not fill the memory.
const ISSUERS_KEPT = 64;

// The most bytes an answer of `count` IDs can take: each ID at most 19
// digits, two quotes and a comma, padded to 24; 64 for the rest.
export function bodyLimit(count) {
  return count * 24 + 64;
}

// The IDs (BigInt, strictly increasing) of the body `text` of an answer to
// a request for `count`; throws an InvalidAnswer saying what is wrong.
export function parseBatch(text, count) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidAnswer("the answer is not JSON");
  }
  const texts = body !== null && typeof body === "object" ? body.ids : undefined;
  if (!Array.isArray(texts) || texts.length === 0 || texts.length > count) {
    throw new InvalidAnswer(`the answer holds no array of 1 to ${count} IDs`);
  }
  const ids = new Array(texts.length);
  let last = -1n;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i];
    if (typeof text !== "string" || !DECIMAL.test(text)) {
      throw new InvalidAnswer(`ID ${JSON.stringify(text)} is not a string of plain decimal digits`);
    }
    const id = BigInt(text);
    if (id <= last) throw new InvalidAnswer(`ID ${id} is not above the ID before it, ${last}`);
    ids[i] = last = id;
  }
  if (last >= ID_LIMIT) throw new InvalidAnswer(`ID ${last} is not below 2^63`);
  return ids;
}

// The last ID taken per tag and issuer from one endpoint; issuer undefined
// for answers without a Snowid-Issuer header.
export class Watermarks {
  #last = new Map(); // tag -> Map(issuer -> BigInt), oldest issuer first

  // Throws an InvalidAnswer if `ids` does not start above the issuer's last batch.
  check(tag, issuer, ids) {
    const last = this.#last.get(tag)?.get(issuer);
    if (last !== undefined && ids[0] <= last) {
      throw new InvalidAnswer(
        `the batch starts at ${ids[0]}, not above ${last}, the last ID of the batch before from issuer ${issuer}`,
      );
    }
  }

  // Remembers the last ID of a batch taken.
  record(tag, issuer, ids) {
    let marks = this.#last.get(tag);
    if (marks === undefined) this.#last.set(tag, (marks = new Map()));
    marks.delete(issuer);
    marks.set(issuer, ids[ids.length - 1]);
    if (marks.size > ISSUERS_KEPT) marks.delete(marks.keys().next().value);
  }
}
