// Client: IDs for an application from one or more snowidd nodes, served
// from a local buffer that a background task keeps topped up over HTTP/1.1
// (GET /v1/ids for Snowflake IDs, GET /v1/segment/{tag} for a tag's numbers).
// The contract is the C++ client's (include/snowid/client.h).
//
// tryNext() takes an ID from the buffer: no I/O, no await, one clock read.
// next() does the same and only when the buffer is empty waits, at most
// emptyWaitMs, for the refill; it then rejects with "unavailable" (never
// waits forever). Endpoints that fail are skipped with exponential backoff;
// while one answers, callers see no error.
//
// The refill task is one async loop per client: when a buffer falls below
// its low-water mark (the take that leaves it there wakes the loop; a timer
// catches the rest) it asks the first healthy endpoint for a batch, with a
// deadline. Batches double while refills come sooner than refillPeriodMs / 2
// and halve while they come later than 2 * refillPeriodMs. A batch is taken
// only as answer.js says (docs/clients.md, "What a client accepts"); any
// other answer is discarded, counted (stats().invalidAnswers) and backs its
// endpoint off as a node that did not answer does.
//
// Order: every ID handed out is unique (issued by a node once, taken from
// the buffer once); one buffer hands its IDs out in increasing order.
// Thread-safety: a Client lives in one JavaScript thread (a worker thread
// opens its own); any number of async tasks may call it at once.
import { performance } from "node:perf_hooks";

import { Watermarks, bodyLimit, parseBatch } from "./answer.js";
import { INVALID_ARGUMENT, NOT_FOUND, SnowidError, UNAVAILABLE, invalidArgument } from "./errors.js";
import { IdBuffer } from "./id_buffer.js";
import { decodeId, layoutFromInfo } from "./layout.js";
import { resolveOptions } from "./options.js";
import { Endpoint, HttpError, InvalidAnswer } from "./transport.js";

const now = () => performance.now();
const LIMIT = /out of range 1\.\.(\d+)/;
// The most bytes read of a /v1/info answer.
const INFO_LIMIT = 64 * 1024;

export class Client {
  #options;
  #nodes;
  #current = 0; // the node that served last: asked first
  #snowflake;
  #tags = new Map();
  #closed = false;
  #woken = false; // a caller asked for a refill since the loop's round began
  #wakeSleep = null; // ends the loop's sleep
  #news = null; // resolved when a batch is put or an error recorded
  #layout = null;
  #calls = { ok: 0, failed: 0, invalid: 0 };
  #loop;

  // Validates the options (a SnowidError "invalid_argument" names the first
  // bad one) and starts the refill task, which fetches the first batch at
  // once. Connects lazily: an endpoint down now is not an error here.
  constructor(options) {
    this.#options = resolveOptions(options);
    const o = this.#options;
    this.#nodes = o.endpoints.map((base) => ({
      endpoint: new Endpoint(base, o),
      watermarks: new Watermarks(),
      retryAt: 0,
      backoffMs: 0,
    }));
    this.#snowflake = new IdBuffer("", o.initialBatch, o.lowWater);
    this.#loop = this.#run().catch((error) => {
      this.#record(this.#snowflake, new SnowidError(UNAVAILABLE, `refill stopped: ${error}`));
    });
  }

  static open(options) {
    return new Client(options);
  }

  // One Snowflake ID (a BigInt) from the buffer, or undefined when the
  // buffer is empty. Never waits, never throws.
  tryNext() {
    const buffer = this.#snowflake;
    const id = buffer.take(now());
    if (buffer.size < buffer.low) this.#wake();
    return id;
  }

  // One Snowflake ID (a BigInt). Rejects with "unavailable" when the buffer
  // stayed empty for emptyWaitMs, with another code when the nodes refuse
  // this client (a refused token or agent: "invalid_argument").
  next() {
    const id = this.tryNext();
    return id !== undefined ? Promise.resolve(id) : this.#waitAndTake(this.#snowflake);
  }

  // `count` Snowflake IDs, an array of BigInt in increasing order, each as
  // next() would return it; on error the IDs already taken are consumed.
  async nextMany(count) {
    if (!Number.isInteger(count) || count < 0) {
      throw invalidArgument(`count: ${count} is not a whole number >= 0`);
    }
    const out = new Array(count);
    for (let i = 0; i < count; ) {
      const id = this.tryNext();
      out[i++] = id !== undefined ? id : await this.#waitAndTake(this.#snowflake);
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
    if (buffer.size < buffer.low) this.#wake();
    return id !== undefined ? Promise.resolve(id) : this.#waitAndTake(buffer);
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

  // What the client did: successful and failed HTTP calls of the refill
  // task, the answers among the failed ones discarded as no node could have
  // sent them, and the Snowflake IDs buffered.
  stats() {
    const calls = this.#calls;
    return {
      calls: calls.ok,
      failedCalls: calls.failed,
      invalidAnswers: calls.invalid,
      buffered: this.#snowflake.size,
    };
  }

  // Stops the refill task, cancels its call in flight and drops the
  // buffers; calls after it reject with "unavailable". Resolves once the
  // task has ended.
  async close() {
    if (!this.#closed) {
      this.#closed = true;
      this.#snowflake.clear();
      for (const buffer of this.#tags.values()) buffer.clear();
      for (const node of this.#nodes) node.endpoint.destroy();
      if (this.#wakeSleep !== null) this.#wakeSleep();
      this.#tellNews();
    }
    await this.#loop;
  }

  // Callers --------------------------------------------------------------

  async #waitAndTake(buffer) {
    const deadline = now() + this.#options.emptyWaitMs;
    for (;;) {
      if (this.#closed) throw new SnowidError(UNAVAILABLE, "the client is closed");
      const id = buffer.take(now());
      if (id !== undefined) {
        if (buffer.size < buffer.low) this.#wake();
        return id;
      }
      if (buffer.refused && buffer.error) throw copy(buffer.error);
      this.#wake();
      const left = deadline - now();
      if (left <= 0 || !(await this.#newsWithin(left))) {
        if (buffer.error) throw copy(buffer.error);
        const what = buffer.tag === "" ? "" : ` for tag '${buffer.tag}'`;
        throw new SnowidError(
          UNAVAILABLE,
          `no ID${what} buffered and none fetched within ${this.#options.emptyWaitMs} ms`,
        );
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

  #wake() {
    if (this.#woken) return;
    this.#woken = true;
    if (this.#wakeSleep !== null) this.#wakeSleep();
  }

  // The refill task -------------------------------------------------------

  async #run() {
    while (!this.#closed) {
      this.#woken = false;
      let wakeAt = now() + this.#options.refillPeriodMs;
      for (const buffer of [this.#snowflake, ...this.#tags.values()]) {
        buffer.dropExpired(now());
        wakeAt = Math.min(wakeAt, await this.#refill(buffer));
        if (this.#closed) return;
        // Past the expiry by a millisecond, or the loop may spin before it.
        wakeAt = Math.min(wakeAt, buffer.oldestExpires() + 1);
      }
      if (!this.#woken) await this.#sleepUntil(wakeAt);
    }
  }

  #sleepUntil(at) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#wakeSleep = null;
        resolve();
      }, Math.max(0, at - now()));
      // A client that is never closed does not keep the process alive.
      timer.unref();
      this.#wakeSleep = () => {
        clearTimeout(timer);
        this.#wakeSleep = null;
        resolve();
      };
    });
  }

  // Fetches batches until the buffer is at its low-water mark or above, the
  // endpoints all failed or the nodes refuse; resolves to when the loop
  // should come back for this buffer (Infinity: when woken or after a period).
  async #refill(buffer) {
    for (;;) {
      if (this.#closed || buffer.size >= buffer.low) return Infinity;
      if (now() < buffer.refusedUntil) return buffer.refusedUntil;
      const retryAt = await this.#fetch(buffer, Math.min(buffer.batch, buffer.cap));
      if (retryAt !== undefined) return retryAt;
    }
  }

  // One batch from the first endpoint that answers, starting from the
  // current one and skipping those backing off. Resolves undefined on
  // progress (a batch put, or the batch size cut to the server's limit),
  // else to when the first backoff ends.
  async #fetch(buffer, count) {
    const nodes = this.#nodes;
    const first = this.#current;
    for (let i = 0; i < nodes.length; i++) {
      const index = (first + i) % nodes.length;
      const node = nodes[index];
      const started = now();
      if (node.retryAt > started) continue;
      try {
        const ids = await fetchBatch(node, buffer.tag, count);
        if (this.#closed) return Infinity;
        this.#calls.ok++;
        node.backoffMs = 0;
        this.#current = index;
        const expires = buffer.tag === "" ? started + this.#options.maxAgeMs : Infinity;
        this.#put(buffer, ids, expires, started);
        return undefined;
      } catch (error) {
        if (this.#closed) return Infinity;
        this.#calls.failed++;
        if (error instanceof InvalidAnswer) this.#calls.invalid++;
        if (this.#failed(buffer, node, index, error, count)) return undefined;
      }
    }
    const later = nodes.map((node) => node.retryAt).filter((at) => at > now());
    return Math.min(Infinity, ...later);
  }

  // Records a failed call; true if the batch size was cut to the server's
  // max_batch (ask again at once). A refusal is this request's, not the
  // node's: the next endpoint is asked but the refusing one keeps its place.
  #failed(buffer, node, index, error, count) {
    const o = this.#options;
    if (error instanceof HttpError) {
      const limit = error.status === 400 ? LIMIT.exec(error.message) : null;
      if (limit !== null && count > Number(limit[1])) {
        buffer.cap = Math.max(1, Number(limit[1]));
        buffer.setBatch(Math.min(buffer.batch, buffer.cap));
        return true;
      }
      const code = error.status === 404 ? NOT_FOUND : INVALID_ARGUMENT;
      this.#record(buffer, new SnowidError(code, error.message, error.status), true);
      buffer.refusedUntil = now() + o.backoffMaxMs;
      return false;
    }
    this.#record(buffer, new SnowidError(UNAVAILABLE, error.message));
    node.backoffMs = node.backoffMs === 0 ? o.backoffInitialMs : Math.min(o.backoffMaxMs, node.backoffMs * 2);
    node.retryAt = now() + node.backoffMs;
    if (this.#current === index) this.#current = (index + 1) % this.#nodes.length;
    return false;
  }

  // Puts a fetched batch in the buffer, adapts the batch size to the rate
  // of refills and tells waiting callers.
  #put(buffer, ids, expires, started) {
    const o = this.#options;
    buffer.put(ids, expires);
    if (buffer.lastRefill !== undefined) {
      const since = started - buffer.lastRefill;
      if (since < o.refillPeriodMs / 2) {
        buffer.setBatch(Math.min(o.maxBatch, buffer.cap, buffer.batch * 2));
      } else if (since > o.refillPeriodMs * 2) {
        buffer.setBatch(Math.max(o.initialBatch, Math.floor(buffer.batch / 2)));
      }
    }
    buffer.lastRefill = started;
    buffer.refusedUntil = 0;
    buffer.error = undefined;
    buffer.refused = false;
    this.#tellNews();
  }

  #record(buffer, error, refused = false) {
    buffer.error = error;
    buffer.refused = refused;
    this.#tellNews();
  }

  async #fetchLayout() {
    const reasons = [];
    for (let i = 0; i < this.#nodes.length; i++) {
      const node = this.#nodes[(this.#current + i) % this.#nodes.length];
      try {
        const { text } = await node.endpoint.get("/v1/info", INFO_LIMIT);
        return layoutFromInfo(JSON.parse(text));
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
function pathOf(tag, count) {
  if (tag === "") return `/v1/ids?count=${count}`;
  const encoded = /^\.\.?$/.test(tag) ? tag.replaceAll(".", "%2E") : encodeURIComponent(tag);
  return `/v1/segment/${encoded}?count=${count}`;
}

// A batch of 1 to `count` IDs (BigInt) for tag `tag` ("" for Snowflake IDs)
// from `node`, as answer.js takes them; an InvalidAnswer naming the call
// for any other answer.
async function fetchBatch(node, tag, count) {
  const path = pathOf(tag, count);
  const { text, issuer } = await node.endpoint.get(path, bodyLimit(count));
  let ids;
  try {
    ids = parseBatch(text, count);
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
