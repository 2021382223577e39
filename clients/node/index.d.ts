// Types of snowid-client (hand-written; the code is index.js and lib/), for
// both `import` (index.mjs) and `require` (index.js): the same objects.
// IDs are BigInt everywhere: a Snowflake ID does not fit a Number exactly.

/** Options; names and defaults are docs/clients.md's, in camelCase with the unit (Ms) in the name. */
export interface ClientOptions {
  /** Base URLs of snowidd's HTTP listeners, e.g. "http://10.0.0.1:8080"; at least one. Each refill goes to one drawn at random among the healthy. */
  endpoints: string[];
  /** Sent as "Authorization: Bearer <token>" when not empty. Default "". */
  bearerToken?: string;
  /** Client name for the nodes' metrics (X-Snowid-Agent): [a-zA-Z][a-zA-Z0-9-]*, <= 64 characters. Default "". */
  agent?: string;
  /** https endpoints: the trusted CA certificates (PEM); default: Node's. */
  ca?: string | Uint8Array | Array<string | Uint8Array>;
  /** Deadline of every HTTP call to a node, ms. Default 500. */
  callDeadlineMs?: number;
  /** Longest wait of next() on an empty buffer before "unavailable", ms; 0: do not wait. Default 200. */
  emptyWaitMs?: number;
  /** ...until the buffer's first batch has arrived: the longer of this and emptyWaitMs, ms. Default 2000. */
  startWaitMs?: number;
  /** A refill starts when fewer than this fraction of a batch is left, (0, 1]. Default 0.5. */
  lowWater?: number;
  /** IDs per refill at first. Default 1000. */
  initialBatch?: number;
  /** IDs per refill at most (snowidd's HTTP max_batch is 10000 by default). Default 10000. */
  maxBatch?: number;
  /** Batches adapt so that refills come about this often, ms. Default 500. */
  refillPeriodMs?: number;
  /** A Snowflake ID buffered this long after the call that fetched it began is dropped, ms (>= 10). Default 10000. */
  maxAgeMs?: number;
  /** A failed endpoint's backoff, doubling per further failure; it is skipped for a wait drawn between half and all of it, ms. Default 100. */
  backoffInitialMs?: number;
  /** ...up to this, ms. Default 5000. */
  backoffMaxMs?: number;
}

export const DEFAULTS: Readonly<Required<Omit<ClientOptions, "ca">> & { ca: undefined }>;

/** The code of a SnowidError: the C++ client's error_code_name. */
export type ErrorCode = "invalid_argument" | "not_found" | "failed_precondition" | "unavailable";

export class SnowidError extends Error {
  readonly code: ErrorCode;
  /** The HTTP status of the answer behind the error, when there was one. */
  readonly httpStatus?: number;
}

/** A node's ID layout, from GET /v1/info. */
export interface Layout {
  readonly timestampBits: number;
  readonly datacenterBits: number;
  readonly workerBits: number;
  readonly sequenceBits: number;
  readonly timeUnitMs: number;
  readonly epochMs: number;
  readonly sequencePosition: "low" | "high";
  readonly totalBits: number;
}

export interface DecodedId {
  id: bigint;
  /** Unix time, ms. */
  timestampMs: number;
  time: Date;
  datacenter: number;
  worker: number;
  sequence: number;
}

/** The counts of docs/clients.md, "Stats", since the client was made. */
export interface ClientStats {
  /** Refill requests sent to nodes (each one, whatever became of it). */
  calls: number;
  /** Those that got no usable answer: no connection, a deadline passed, a 4xx or 5xx, or an invalid answer. */
  failedCalls: number;
  /** Answers discarded as no node could have sent them (docs/clients.md, "What a client accepts"); a part of failedCalls. */
  invalidAnswers: number;
  /** IDs and segment numbers taken into the buffers from valid answers. */
  idsReceived: number;
  /** IDs and segment numbers handed to the application. */
  idsServed: number;
  /** IDs dropped from the buffer unissued after maxAgeMs. */
  idsExpired: number;
}

export class Client {
  /** Validates the options (throws SnowidError "invalid_argument" naming the option) and starts the first refill. */
  constructor(options: ClientOptions);
  static open(options: ClientOptions): Client;
  /** One Snowflake ID from the buffer, or undefined if it is empty; never waits, never throws. */
  tryNext(): bigint | undefined;
  /** One Snowflake ID; waits at most emptyWaitMs (startWaitMs before the first batch) on an empty buffer. */
  next(): Promise<bigint>;
  /** `count` distinct Snowflake IDs (rising within a node's batch, not across nodes). */
  nextMany(count: number): Promise<bigint[]>;
  /** The next number of segment tag `tag` (never ages); "not_found" for an unknown tag. */
  nextTag(tag: string): Promise<bigint>;
  /** `count` (default 1) business IDs of tag `tag` (its numbers formatted by its template, e.g. "ORD-20261202-000001"), from one node in one call, unbuffered, failed over as refills are; "not_found" for an unknown tag, "failed_precondition" for a retired tag, one without a template or one whose period outgrew its template. */
  nextBusiness(tag: string, count?: number): Promise<string[]>;
  /** The nodes' layout from GET /v1/info, fetched once. */
  layout(): Promise<Layout>;
  /** The fields of an ID under the nodes' layout. */
  decode(id: bigint | string): Promise<DecodedId>;
  stats(): ClientStats;
  /** Stops the refills and drops the buffers; later calls reject with "unavailable". */
  close(): Promise<void>;
}

/** Builds a Layout from the JSON of GET /v1/info. */
export function layoutFromInfo(info: unknown): Layout;
/** The fields of an ID under a layout; throws SnowidError "invalid_argument" for an ID outside it. */
export function decodeId(layout: Layout, id: bigint | string): DecodedId;
