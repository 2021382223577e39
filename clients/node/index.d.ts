// Types of snowid-client (hand-written; the code is index.js and lib/).
// IDs are BigInt everywhere: a Snowflake ID does not fit a Number exactly.

/** Options; names and defaults are the C++ ClientOptions' in camelCase. */
export interface ClientOptions {
  /** Base URLs of snowidd's HTTP listeners, e.g. "http://10.0.0.1:8080"; at least one. Tried in order. */
  endpoints: string[];
  /** Sent as "Authorization: Bearer <token>" when not empty. Default "". */
  bearerToken?: string;
  /** Client name for the nodes' metrics (X-Snowid-Agent): [a-zA-Z][a-zA-Z0-9-]*, <= 64 characters. Default "". */
  agent?: string;
  /** https endpoints: the trusted CA certificates (PEM); default: Node's. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Deadline of every HTTP call to a node, ms. Default 500. */
  callDeadlineMs?: number;
  /** Longest wait of next() on an empty buffer before "unavailable", ms. Default 200. */
  emptyWaitMs?: number;
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
  /** A failed endpoint is skipped this long, doubling per further failure, ms. Default 100. */
  backoffInitialMs?: number;
  /** ...up to this, ms. Default 5000. */
  backoffMaxMs?: number;
}

export const DEFAULTS: Readonly<Required<Omit<ClientOptions, "ca">> & { ca: undefined }>;

/** The code of a SnowidError: the C++ client's error_code_name. */
export type ErrorCode = "invalid_argument" | "not_found" | "unavailable";

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

export interface ClientStats {
  /** Successful HTTP calls of the refill task (round trips that brought IDs or numbers). */
  calls: number;
  /** Failed HTTP calls of the refill task. */
  failedCalls: number;
  /**
   * Of the failed calls, the 200 answers discarded as no node could have sent them
   * (docs/clients.md, "What a client accepts"); each also backed its endpoint off.
   */
  invalidAnswers: number;
  /** Snowflake IDs buffered now. */
  buffered: number;
}

export class Client {
  /** Validates the options (throws SnowidError "invalid_argument") and starts the refill task. */
  constructor(options: ClientOptions);
  static open(options: ClientOptions): Client;
  /** One Snowflake ID from the buffer, or undefined if it is empty; never waits, never throws. */
  tryNext(): bigint | undefined;
  /** One Snowflake ID; waits at most emptyWaitMs on an empty buffer. */
  next(): Promise<bigint>;
  /** `count` Snowflake IDs in increasing order. */
  nextMany(count: number): Promise<bigint[]>;
  /** The next number of segment tag `tag` (never ages); "not_found" for an unknown tag. */
  nextTag(tag: string): Promise<bigint>;
  /** The nodes' layout from GET /v1/info, fetched once. */
  layout(): Promise<Layout>;
  /** The fields of an ID under the nodes' layout. */
  decode(id: bigint | string): Promise<DecodedId>;
  stats(): ClientStats;
  /** Stops the refill task and drops the buffers; later calls reject with "unavailable". */
  close(): Promise<void>;
}

/** Builds a Layout from the JSON of GET /v1/info. */
export function layoutFromInfo(info: unknown): Layout;
/** The fields of an ID under a layout; throws SnowidError "invalid_argument" for an ID outside it. */
export function decodeId(layout: Layout, id: bigint | string): DecodedId;
