"use strict";
// snowid-client: IDs from snowidd nodes over HTTP, buffered locally.
// The public surface, as CommonJS (require); index.mjs gives the same
// objects to `import`. lib/client.js holds the design.
const { Client } = require("./lib/client.js");
const { SnowidError } = require("./lib/errors.js");
const { decodeId, layoutFromInfo } = require("./lib/layout.js");
const { DEFAULTS } = require("./lib/options.js");

module.exports = { Client, SnowidError, decodeId, layoutFromInfo, DEFAULTS };
