// snowid-client: IDs from snowidd nodes over HTTP, buffered locally.
// The public surface; lib/client.js holds the design.
export { Client } from "./lib/client.js";
export { SnowidError } from "./lib/errors.js";
export { decodeId, layoutFromInfo } from "./lib/layout.js";
export { DEFAULTS } from "./lib/options.js";
