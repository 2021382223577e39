// Endpoint: one snowidd node's HTTP listener, called with GET and answered
// in JSON, on a keep-alive connection, with a deadline on every call.
//
// get() resolves to the parsed JSON of a 2xx answer. It rejects with
//   NodeError  the node is down, slow (the deadline passed), answers 5xx or
//              something that is not JSON: ask the next node, back off this one
//   HttpError  any other status (4xx): the node refuses this request
// destroy() ends the connections, the one in flight included (its call
// rejects with a NodeError). One Endpoint is used by one client.
import http from "node:http";
import https from "node:https";

export class NodeError extends Error {}

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export class Endpoint {
  // `base`: a validated base URL without a trailing slash.
  constructor(base, { bearerToken, agent, callDeadlineMs, ca }) {
    this.base = base;
    const secure = base.startsWith("https:");
    this.module = secure ? https : http;
    // One connection serves the refills; a second lets a layout look-up
    // run beside a refill without waiting for it.
    const agentOptions = { keepAlive: true, maxSockets: 2, maxFreeSockets: 2 };
    if (secure && ca !== undefined) agentOptions.ca = ca;
    this.agent = new this.module.Agent(agentOptions);
    this.headers = { accept: "application/json" };
    if (bearerToken) this.headers.authorization = `Bearer ${bearerToken}`;
    if (agent) this.headers["x-snowid-agent"] = agent;
    this.deadlineMs = callDeadlineMs;
  }

  // `path` starts with "/" and is already percent-encoded.
  get(path) {
    return new Promise((resolve, reject) => {
      const url = this.base + path;
      let done = false;
      const finish = (settleWith, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settleWith(value);
      };
      const fail = (message) => finish(reject, new NodeError(`${url}: ${message}`));
      const request = this.module.get(url, { agent: this.agent, headers: this.headers });
      const timer = setTimeout(() => {
        fail(`no answer within ${this.deadlineMs} ms`);
        request.destroy();
      }, this.deadlineMs);
      request.on("error", (error) => fail(error.message));
      request.on("close", () => fail("connection closed without an answer"));
      request.on("response", (response) => {
        const chunks = [];
        response.setEncoding("utf8");
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("error", (error) => fail(error.message));
        response.on("end", () => {
          const text = chunks.join("");
          settle(url, response.statusCode, text, (v) => finish(resolve, v), (e) => finish(reject, e));
        });
        response.on("close", () => fail("connection closed in the middle of the answer"));
      });
    });
  }

  destroy() {
    this.agent.destroy();
  }
}

function settle(url, status, text, resolve, reject) {
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const reason = body && typeof body.error === "string" ? body.error : text.slice(0, 200);
  if (status >= 200 && status < 300 && body !== undefined) {
    resolve(body);
  } else if (status >= 400 && status < 500) {
    reject(new HttpError(status, `${url}: ${reason} (HTTP ${status})`));
  } else {
    reject(new NodeError(`${url}: ${reason} (HTTP ${status})`));
  }
}
