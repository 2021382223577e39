"use strict";
// A failed endpoint's backoff: backoffInitialMs after the first failure,
// doubled per further failure up to backoffMaxMs, reset by a success; the
// endpoint is skipped for a wait drawn between half and all of it, so that
// clients that saw one failure together do not come back together.
// Pure functions; `random` returns a number in [0, 1).

// The backoff after one more failure, given the one before (0: none).
function nextBackoff(backoffMs, { backoffInitialMs, backoffMaxMs }) {
  return backoffMs === 0 ? backoffInitialMs : Math.min(backoffMaxMs, backoffMs * 2);
}

// How long the endpoint is skipped for a backoff of `backoffMs`.
function jitteredWait(backoffMs, random = Math.random) {
  return backoffMs * (0.5 + 0.5 * random());
}

module.exports = { jitteredWait, nextBackoff };
