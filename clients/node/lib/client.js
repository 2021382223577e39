"use strict";
// Client: IDs for an application from one or more snowidd nodes, served
// from a local buffer that refill calls keep topped up over HTTP/1.1
// (GET /v1/ids for Snowflake IDs, GET /v1/segment/{tag} for a tag's
// numbers, both with format=binary: 8 bytes a number). The contract is
// docs/clients.md's, the C++ client's (include/snowid/client.h).
//
// tryNext() takes an ID from the buffer: no I/O, no await, one clock read.
// next() does the same and only when the buffer is empty waits, at most
// emptyWaitMs (startWaitMs until the buffer's first batch has arrived), for
// a refill; it then rejects with "unavailable" (never waits forever).
//
// Refills: when a buffer falls below its low-water mark (the take that
// leaves it there queues a refill round; a timer brings the rest: backoff
// ends, expiry) a round starts calls, each to an endpoint drawn at random
// among the healthy ones that no call of this buffer is at, so a fleet of
// clients given the same list loads every node alike. A failed call backs
// its endpoint off (backoffInitialMs doubled per failure up to
// backoffMaxMs, each wait drawn between half and all of that: jitter) and
// the round goes on at once to another healthy endpoint. Batches double
// while refills come sooner than refillPeriodMs / 2 and halve while they
// come later than twice it; at the largest batch, a buffer that ran dry
// while a call was out allows one more call at once, each to another node
// (a node of the default layout issues at most 4,096 IDs a ms; never two
// calls of one buffer at one endpoint, whose answers the order check per
// issuer takes one after the other), down again when refills slow. A
// batch is taken only as answer.js says (docs/clients.md, "What a client
// accepts"); any other answer is discarded, counted
// (stats().invalidAnswers) and backs its endpoint off as a node that did
// not answer does. An endpoint that refuses format=binary (a node from
// before it: 400 naming the format) is asked for JSON from then on.
//
// Business IDs (nextBusiness) are not buffered: each call asks one node
// for its batch, drawn as a refill's endpoint is among the healthy ones,
// then the others in turn while they fail (no answer, the deadline, a 5xx
// such as 503, an invalid answer: lib/business.js), each failure backing
// its endpoint off for the refills too and counted in stats(). A refusal
// (4xx; 409 "failed_precondition") is returned at once.
//
// Order: every ID handed out is unique (issued by a node once, taken from
// the buffer once). Batches from several nodes are handed out in the order
// they arrived, so IDs rise within a batch, not across nodes.
// Thread-safety: a Client lives in one JavaScript thread (a worker thread
// opens its own); any number of async tasks may call it at once.
const { performance } = require("node:perf_hooks");

const { jitteredWait, nextBackoff } = require("./backoff.js");
const { Watermarks, binaryLimit, jsonLimit, parseBinaryBatch, parseJsonBatch } = require("./answer.js");
const { fetchBusiness } = require("./business.js");
const {
  FAILED_PRECONDITION,
  INVALID_ARGUMENT,
  NOT_FOUND,
  SnowidError,
  UNAVAILABLE,
  invalidArgument,
} = require("./errors.js");
const { IdBuffer } = require("./id_buffer.js");
const { decodeId, layoutFromInfo } = require("./layout.js");
const { resolveOptions } = require("./options.js");
const { Endpoint, HttpError, InvalidAnswer } = require("./transport.js");

const now = () => performance.now();
// snowidd's refusals of a count above its max_batch and of format=binary.
const COUNT_LIMIT = /out of range 1\.\.(\d+)/;
const BINARY_REFUSED = /format 'binary'/;
// The most bytes read of a /v1/info answer.
const INFO_LIMIT = 64 * 1024;

class Client {
  #options;
  #nodes;
  #snowflake;
  #tags = new Map();
  #closed = false;
  #news = null; // resolved when a batch is put or an error recorded
  #layout = null;
  #calls = { sent: 0, failed: 0, invalid: 0 };
  #running = new Set(); // the refill calls out now

  // Validates the options (a SnowidError "invalid_argument" names the first
  // bad one) and starts the first refill at once. Connects lazily: an
  // endpoint down now is not an error here.
  constructor(options) {
    this.#options = resolveOptions(options);
    const o = this.#options;
    this.#nodes = o.endpoints.map((base) => ({
      endpoint: new Endpoint(base, o),
      watermarks: new Watermarks(),
      retryAt: 0,
      backoffMs: 0,
      binary: true, // asked for format=binary until it refuses it
    }));
    this.#snowflake = new IdBuffer("", o.initialBatch, o.lowWater);
    this.#refill(this.#snowflake);
  }

  static open(options) {
    return new Client(options);
  }

  // One Snowflake ID (a BigInt) from the buffer, or undefined when the
  // buffer is empty. Never waits, never throws.
  tryNext() {
    const buffer = this.#snowflake;
    const id = buffer.take(now());
    if (buffer.size < buffer.low) this.#wake(buffer);
    return id;
  }

  // One Snowflake ID (a BigInt). Rejects with "unavailable" when the buffer
  // stayed empty for emptyWaitMs, with another code when the nodes refuse
  // this client (a refused token or agent: "invalid_argument").
  next() {
    const id = this.tryNext();
    return id !== undefined ? Promise.resolve(id) : this.#waitAndTake(this.#snowflake);
  }

  // `count` distinct Snowflake IDs, an array of BigInt, each as next()
  // would return it; on error the IDs already taken are consumed. The
  // clock is read once per run of takes from the buffer, as the C++
  // client's next(span) does: no code of the caller's runs in between.
  async nextMany(count) {
    if (!Number.isInteger(count) || count < 0) {
      throw invalidArgument(`count: ${count} is not a whole number >= 0`);
    }
    const buffer = this.#snowflake;
    const out = new Array(count);
    let at = now();
    for (let i = 0; i < count; ) {
      const id = buffer.take(at);
      if (buffer.size < buffer.low) this.#wake(buffer);
      if (id !== undefined) {
        out[i++] = id;
      } else {
        out[i++] = await this.#waitAndTake(buffer);
        at = now();
      }
    }
    return out;
  }

  // The next number (a BigInt) of segment tag `tag`, from a buffer of its
  // own; segment numbers never age. "not_found" if the nodes do not know it.
  nextTag(tag) {
    if (typeof tag !== "string" || tag.length === 0 || tag.length > 255) {
      return Promise.reject(invalidArgument(`tag: '${tag}' is not a segment tag`));
    }
    let buffer = this.#tags.get(tag);
    if (buffer === undefined) {
      if (this.#closed) return this.#waitAndTake(this.#snowflake);
      buffer = new IdBuffer(tag, this.#options.initialBatch, this.#options.lowWater);
      this.#tags.set(tag, buffer);
    }
    const id = buffer.take(0);
    if (buffer.size < buffer.low) this.#wake(buffer);
    return id !== undefined ? Promise.resolve(id) : this.#waitAndTake(buffer);
  }

  // `count` business IDs (strings) of tag `tag`, from one node in one call
  // (see the top of the file), callDeadlineMs per endpoint. "not_found" for
  // an unknown tag; "failed_precondition" (naming it) for a retired tag, one
  // without a template, or one whose period outgrew its template;
  // "invalid_argument" for a refused token; "unavailable" naming each
  // endpoint's failure when none answered.
  async nextBusiness(tag, count = 1) {
    if (typeof tag !== "string" || tag.length === 0 || tag.length > 255) {
      throw invalidArgument(`tag: '${tag}' is not a segment tag`);
    }
    if (!Number.isInteger(count) || count < 1 || count > 1_000_000) {
      throw invalidArgument(`count: ${count} is not a whole number from 1 to 1000000`);
    }
    const path = `/v1/business/${encodedTag(tag)}?count=${count}`;
    const tried = new Set();
    const failures = [];
    for (;;) {
      if (this.#closed) throw new SnowidError(UNAVAILABLE, "the client is closed");
      let node = this.#pick(tried, now());
      if (node === undefined && tried.size > 0) {
        const why = failures.join("; ");
        throw new SnowidError(UNAVAILABLE, `no endpoint gave ${count} business IDs of tag '${tag}': ${why}`);
      }
      // None healthy: the one whose backoff ends first (a call asks a node).
      node ??= this.#nodes.reduce((a, b) => (b.retryAt < a.retryAt ? b : a));
      tried.add(node);
      this.#calls.sent++;
      try {
        const ids = await fetchBusiness(node, path, tag, count);
        node.backoffMs = 0;
        return ids;
      } catch (error) {
        this.#calls.failed++;
        if (error instanceof HttpError) {
          const code = { 404: NOT_FOUND, 409: FAILED_PRECONDITION }[error.status] ?? INVALID_ARGUMENT;
          throw new SnowidError(code, error.message, error.status);
        }
        if (error instanceof InvalidAnswer) this.#calls.invalid++;
        this.#backOff(node);
        failures.push(error.message);
      }
    }
  }

  // The layout of the nodes, from GET /v1/info of the first that answers;
  // fetched once, then cached.
  layout() {
    if (this.#layout === null) {
      this.#layout = this.#fetchLayout();
      this.#layout.catch(() => {
        this.#layout = null;
      });
    }
    return this.#layout;
  }

  // { id, timestampMs, time, datacenter, worker, sequence } of `id` (a
  // BigInt or a string of digits) under the nodes' layout.
  async decode(id) {
    return decodeId(await this.layout(), id);
  }

  // The counts of docs/clients.md, "Stats": refill calls sent, those that
  // brought no usable answer, the answers among them discarded as no node
  // could have sent them; IDs (and segment numbers) taken into the buffers,
  // handed to the application, and dropped unissued after maxAgeMs.
  stats() {
    const ids = { received: 0, served: 0, expired: 0 };
    for (const buffer of this.#buffers()) {
      ids.received += buffer.received;
      ids.served += buffer.served;
      ids.expired += buffer.expired;
    }
    return {
      calls: this.#calls.sent,
      failedCalls: this.#calls.failed,
      invalidAnswers: this.#calls.invalid,
      idsReceived: ids.received,
      idsServed: ids.served,
      idsExpired: ids.expired,
    };
  }

  // Stops the refills, cancels the calls out and drops the buffers; calls
  // after it reject with "unavailable". Resolves once the calls have ended.
  async close() {
    if (!this.#closed) {
      this.#closed = true;
      for (const buffer of this.#buffers()) {
        buffer.clear();
        clearTimeout(buffer.timer);
      }
      for (const node of this.#nodes) node.endpoint.destroy();
      this.#tellNews();
    }
    await Promise.all(this.#running);
  }

  // Callers --------------------------------------------------------------

  async #waitAndTake(buffer) {
    const o = this.#options;
    const waitMs = buffer.started ? o.emptyWaitMs : Math.max(o.emptyWaitMs, o.startWaitMs);
    const deadline = now() + waitMs;
    for (;;) {
      if (this.#closed) throw new SnowidError(UNAVAILABLE, "the client is closed");
      const id = buffer.take(now());
      if (id !== undefined) {
        if (buffer.size < buffer.low) this.#wake(buffer);
        return id;
      }
      if (buffer.refused && buffer.error) throw copy(buffer.error);
      this.#refill(buffer);
      const left = deadline - now();
      if (left <= 0 || !(await this.#newsWithin(left))) {
        if (buffer.error) throw copy(buffer.error);
        const what = buffer.tag === "" ? "" : ` for tag '${buffer.tag}'`;
        throw new SnowidError(UNAVAILABLE, `no ID${what} buffered and none fetched within ${waitMs} ms`);
      }
    }
  }

  // Resolves true on news, false once `ms` passed without.
  #newsWithin(ms) {
    if (this.#news === null) {
      let resolve;
      const promise = new Promise((r) => (resolve = r));
      this.#news = { promise, resolve };
    }
    const news = this.#news.promise;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      news.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #tellNews() {
    if (this.#news !== null) {
      this.#news.resolve();
      this.#news = null;
    }
  }

  // Queues a refill round for a buffer below its low-water mark, unless one
  // is queued or the buffer has all the calls out that it may.
  #wake(buffer) {
    if (buffer.scheduled || buffer.running >= buffer.parallel || this.#closed) return;
    buffer.scheduled = true;
    setImmediate(() => {
      buffer.scheduled = false;
      this.#refill(buffer);
    });
  }

  * #buffers() {
    yield this.#snowflake;
    yield* this.#tags.values();
  }

  // Refills --------------------------------------------------------------

  // A refill round: drops expired IDs, starts calls while the buffer and
  // the IDs asked for are below the low-water mark and the buffer may have
  // more calls out, and sets the timer that brings the next round (a
  // backoff's or a refusal's end, the oldest batch's expiry).
  #refill(buffer) {
    if (this.#closed) return;
    const at = now();
    buffer.dropExpired(at);
    // Past the expiry by a millisecond, or the timer may fire before it.
    let comeBack = buffer.oldestExpires() + 1;
    while (buffer.running < buffer.parallel && buffer.size + buffer.pending < buffer.low) {
      if (at < buffer.refusedUntil) {
        comeBack = Math.min(comeBack, buffer.refusedUntil);
        break;
      }
      const node = this.#pick(buffer.busy, at);
      if (node === undefined) {
        comeBack = Math.min(comeBack, this.#healthyAgainAt(buffer, at));
        break;
      }
      this.#start(buffer, node, Math.min(buffer.batch, buffer.cap));
    }
    this.#arm(buffer, comeBack);
  }

  // An endpoint drawn at random among those healthy at `at` and not in
  // `busy` (those a call of the buffer is at, or a business call tried);
  // undefined if there is none.
  #pick(busy, at) {
    let chosen;
    let seen = 0;
    for (const node of this.#nodes) {
      if (node.retryAt > at || busy.has(node)) continue;
      seen++;
      if (Math.random() * seen < 1) chosen = node; // each of the `seen` alike
    }
    return chosen;
  }

  // When the first endpoint that `buffer` has no call at ends its backoff.
  #healthyAgainAt(buffer, at) {
    let first = Infinity;
    for (const node of this.#nodes) {
      if (!buffer.busy.has(node) && node.retryAt > at) first = Math.min(first, node.retryAt);
    }
    return first;
  }

  // Sets the buffer's timer to `at` (performance.now() ms) unless it fires
  // sooner; a round that finds nothing to do sets it again.
  #arm(buffer, at) {
    if (at === Infinity || (buffer.timer !== undefined && buffer.timerAt <= at)) return;
    clearTimeout(buffer.timer);
    buffer.timerAt = at;
    buffer.timer = setTimeout(() => {
      buffer.timer = undefined;
      this.#refill(buffer);
    }, Math.max(0, at - now()));
    // A client that is never closed does not keep the process alive.
    buffer.timer.unref();
  }

  #start(buffer, node, count) {
    buffer.running++;
    buffer.pending += count;
    buffer.busy.add(node);
    this.#calls.sent++;
    const call = this.#call(buffer, node, count).catch((error) => {
      this.#record(buffer, new SnowidError(UNAVAILABLE, `refill failed: ${error}`));
    });
    this.#running.add(call);
    call.then(() => this.#running.delete(call));
  }

  // One refill call: a batch of `count` for `buffer` from `node`, put in the
  // buffer or its failure recorded; then the next round.
  async #call(buffer, node, count) {
    const started = now();
    let batch;
    let failure;
    try {
      batch = await fetchBatch(node, buffer.tag, count);
    } catch (error) {
      failure = error;
    }
    buffer.running--;
    buffer.pending -= count;
    buffer.busy.delete(node);
    if (this.#closed) return;
    if (failure === undefined) this.#took(buffer, node, batch, started);
    else this.#failed(buffer, node, failure, count);
    this.#refill(buffer);
  }

  // Puts a fetched batch in the buffer, adapts the batch size and the calls
  // allowed at once to the rate of refills, and tells waiting callers.
  #took(buffer, node, batch, started) {
    const o = this.#options;
    node.backoffMs = 0;
    buffer.put(batch, buffer.tag === "" ? started + o.maxAgeMs : Infinity);
    if (buffer.lastRefill !== undefined) {
      const since = started - buffer.lastRefill;
      const largest = Math.min(o.maxBatch, buffer.cap);
      if (since < o.refillPeriodMs / 2 && buffer.batch < largest) {
        buffer.setBatch(Math.min(largest, buffer.batch * 2));
      } else if (buffer.ranDry && buffer.batch >= largest && buffer.parallel < this.#nodes.length) {
        buffer.setParallel(buffer.parallel + 1);
      } else if (since > o.refillPeriodMs * 2) {
        if (buffer.parallel > 1) buffer.setParallel(buffer.parallel - 1);
        else buffer.setBatch(Math.max(o.initialBatch, Math.floor(buffer.batch / 2)));
      }
    }
    buffer.lastRefill = started;
    buffer.ranDry = false;
    buffer.refusedUntil = 0;
    buffer.error = undefined;
    buffer.refused = false;
    this.#tellNews();
  }

  // Records a failed call. A refusal is this request's, not the node's: it
  // reaches the callers and is not asked of another node before
  // backoffMaxMs. An endpoint that refuses format=binary is asked for JSON
  // from then on; a count above a node's max_batch is cut to it. Any other
  // failure backs the endpoint off, with jitter.
  #failed(buffer, node, error, count) {
    const o = this.#options;
    this.#calls.failed++;
    if (error instanceof InvalidAnswer) this.#calls.invalid++;
    if (error instanceof HttpError) {
      if (error.status === 400 && node.binary && BINARY_REFUSED.test(error.message)) {
        node.binary = false;
        return;
      }
      const limit = error.status === 400 ? COUNT_LIMIT.exec(error.message) : null;
      if (limit !== null && count > Number(limit[1])) {
        buffer.cap = Math.max(1, Number(limit[1]));
        buffer.setBatch(Math.min(buffer.batch, buffer.cap));
        return;
      }
      const code = error.status === 404 ? NOT_FOUND : INVALID_ARGUMENT;
      buffer.refusedUntil = now() + o.backoffMaxMs;
      this.#record(buffer, new SnowidError(code, error.message, error.status), true);
      return;
    }
    this.#backOff(node);
    this.#record(buffer, new SnowidError(UNAVAILABLE, error.message));
  }

  // Skips a failed endpoint for a jittered wait of its doubled backoff.
  #backOff(node) {
    node.backoffMs = nextBackoff(node.backoffMs, this.#options);
    node.retryAt = now() + jitteredWait(node.backoffMs);
  }

  #record(buffer, error, refused = false) {
    buffer.error = error;
    buffer.refused = refused;
    this.#tellNews();
  }

  async #fetchLayout() {
    const reasons = [];
    const first = Math.floor(Math.random() * this.#nodes.length);
    for (let i = 0; i < this.#nodes.length; i++) {
      const node = this.#nodes[(first + i) % this.#nodes.length];
      try {
        const { bytes } = await node.endpoint.get("/v1/info", INFO_LIMIT);
        return layoutFromInfo(JSON.parse(Buffer.from(bytes.buffer, 0, bytes.length).toString("utf8")));
      } catch (error) {
        if (error instanceof HttpError) throw new SnowidError(INVALID_ARGUMENT, error.message, error.status);
        reasons.push(error.message);
      }
    }
    throw new SnowidError(UNAVAILABLE, `no node answered /v1/info: ${reasons.join("; ")}`);
  }
}

// The route of a refill. A tag goes percent-encoded in the path; "." and
// ".." too, which a URL would otherwise resolve away.
function pathOf(tag, count, binary) {
  const query = binary ? `?count=${count}&format=binary` : `?count=${count}`;
  if (tag === "") return `/v1/ids${query}`;
  return `/v1/segment/${encodedTag(tag)}${query}`;
}

function encodedTag(tag) {
  return /^\.\.?$/.test(tag) ? tag.replaceAll(".", "%2E") : encodeURIComponent(tag);
}

// A batch of 1 to `count` IDs (a BigInt64Array) for tag `tag` ("" for
// Snowflake IDs) from `node`, in binary unless the node refused it, as
// answer.js takes them; an InvalidAnswer naming the call for any other
// answer.
async function fetchBatch(node, tag, count) {
  const binary = node.binary;
  const path = pathOf(tag, count, binary);
  const limit = binary ? binaryLimit(count) : jsonLimit(count);
  const { bytes, issuer, contentType } = await node.endpoint.get(path, limit);
  let ids;
  try {
    ids = binary ? parseBinaryBatch(bytes, contentType, count) : parseJsonBatch(bytes, count);
    node.watermarks.check(tag, issuer, ids);
  } catch (error) {
    throw new InvalidAnswer(`${node.endpoint.base}${path}: ${error.message}`);
  }
  node.watermarks.record(tag, issuer, ids);
  return ids;
}

function copy(error) {
  return new SnowidError(error.code, error.message, error.httpStatus);
}

module.exports = { Client };
