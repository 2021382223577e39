"use strict";
// Endpoint: one snowidd node's HTTP listener, called with GET on a
// keep-alive connection, with a deadline on every call and a limit on the
// body read.
//
// get(path, limitBytes) resolves to { bytes, issuer, contentType } of a 200
// answer: its body (a Uint8Array at offset 0 of an ArrayBuffer of its own,
// so that an 8-byte view of it is aligned), its Snowid-Issuer header
// (undefined without one) and its Content-Type. It rejects with
//   InvalidAnswer  a 200 answer whose body is above limitBytes or not whole
//                  by the deadline (a NodeError: the node is backed off),
//                  or, from the caller, one no node could have sent
//   NodeError      the node is down, slow (the deadline passed before an
//                  answer), or answers 5xx or another status
//   HttpError      4xx: the node refuses this request
// The deadline covers the whole call: connect, headers and the whole body.
// A body is read no further than its limit; the connection is then ended.
// destroy() ends the connections, the one in flight included (its call
// rejects with a NodeError). One Endpoint is used by one client.
const http = require("node:http");
const https = require("node:https");

class NodeError extends Error {}

class InvalidAnswer extends NodeError {}

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The most bytes of a refusal's body read for its message.
const REFUSAL_LIMIT = 4096;

class Endpoint {
  // `base`: a validated base URL without a trailing slash.
  constructor(base, { bearerToken, agent, callDeadlineMs, ca }) {
    this.base = base;
    const secure = base.startsWith("https:");
    this.module = secure ? https : http;
    // One connection serves the refills of a buffer; more let a layout
    // look-up and other buffers' refills run beside it.
    const agentOptions = { keepAlive: true, maxSockets: 4, maxFreeSockets: 4 };
    if (secure && ca !== undefined) agentOptions.ca = ca;
    this.agent = new this.module.Agent(agentOptions);
    this.headers = { accept: "application/octet-stream, application/json" };
    if (bearerToken) this.headers.authorization = `Bearer ${bearerToken}`;
    if (agent) this.headers["x-snowid-agent"] = agent;
    this.deadlineMs = callDeadlineMs;
  }

  // `path` starts with "/" and is already percent-encoded.
  get(path, limitBytes) {
    return new Promise((resolve, reject) => {
      const url = this.base + path;
      let done = false;
      let taken = false; // a 200 answer has begun: its faults are InvalidAnswers
      const finish = (settleWith, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settleWith(value);
      };
      const fail = (message) => {
        if (done) return;
        const Kind = taken ? InvalidAnswer : NodeError;
        finish(reject, new Kind(`${url}: ${message}`));
        request.destroy();
      };
      const request = this.module.get(url, { agent: this.agent, headers: this.headers });
      const timer = setTimeout(() => {
        fail(taken ? `the body was not whole within ${this.deadlineMs} ms` : `no answer within ${this.deadlineMs} ms`);
      }, this.deadlineMs);
      request.on("error", (error) => fail(error.message));
      request.on("close", () => fail("connection closed without an answer"));
      request.on("response", (response) => {
        const status = response.statusCode;
        taken = status === 200;
        const limit = taken ? limitBytes : Math.min(limitBytes, REFUSAL_LIMIT);
        const declared = Number(response.headers["content-length"]);
        if (taken && declared > limit) return fail(`a body of ${declared} bytes, above ${limit}`);
        const chunks = [];
        let size = 0;
        const end = () => {
          if (done) return;
          const bytes = join(chunks, size);
          if (status === 200) {
            const issuer = response.headers["snowid-issuer"];
            return finish(resolve, { bytes, issuer, contentType: response.headers["content-type"] });
          }
          finish(reject, refusal(url, status, bytes));
        };
        response.on("data", (chunk) => {
          if (size + chunk.length <= limit) {
            chunks.push(chunk);
            size += chunk.length;
          } else if (taken) {
            fail(`a body above ${limit} bytes`);
          } else {
            chunks.push(chunk.subarray(0, limit - size));
            size = limit;
            end(); // the rest of a long refusal is left unread
            request.destroy();
          }
        });
        response.on("error", (error) => fail(error.message));
        response.on("end", end);
        response.on("close", () => fail("connection closed in the middle of the answer"));
      });
    });
  }

  destroy() {
    this.agent.destroy();
  }
}

// The chunks in one Uint8Array of `size` bytes at offset 0 of its own buffer.
function join(chunks, size) {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}

// The error of an answer other than 200, with the reason its JSON gives.
function refusal(url, status, bytes) {
  const text = Buffer.from(bytes.buffer, 0, bytes.length).toString("utf8");
  let reason = text.slice(0, 200);
  try {
    const body = JSON.parse(text);
    if (body && typeof body.error === "string") reason = body.error;
  } catch {
    // not JSON: the text itself
  }
  const message = `${url}: ${reason} (HTTP ${status})`;
  return status >= 400 && status < 500 ? new HttpError(status, message) : new NodeError(message);
}

module.exports = { Endpoint, HttpError, InvalidAnswer, NodeError };
