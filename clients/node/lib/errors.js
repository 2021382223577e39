"use strict";
// SnowidError: the one error type the client throws or rejects with.
//
// `code` is the C++ client's error_code_name (include/snowid/error.h), so
// programs in either language test the same names:
//   "invalid_argument"  a bad option, or the nodes refuse this client's
//                       request (token: HTTP 401/403, agent or count: 400)
//   "not_found"         the nodes do not know a segment tag (HTTP 404)
//   "failed_precondition" nextBusiness: the tag is retired, has no template
//                       or its period's numbers outgrew the template's width
//                       (HTTP 409); not retried
//   "unavailable"       no ID within emptyWaitMs: every node down or slow,
//                       or the client is closed
// `httpStatus` is the status of the answer behind the error, when there was one.
class SnowidError extends Error {
  constructor(code, message, httpStatus = undefined) {
    super(message);
    this.name = "SnowidError";
    this.code = code;
    if (httpStatus !== undefined) this.httpStatus = httpStatus;
  }
}

const INVALID_ARGUMENT = "invalid_argument";
const NOT_FOUND = "not_found";
const FAILED_PRECONDITION = "failed_precondition";
const UNAVAILABLE = "unavailable";

function invalidArgument(message) {
  return new SnowidError(INVALID_ARGUMENT, message);
}

module.exports = {
  SnowidError,
  FAILED_PRECONDITION,
  INVALID_ARGUMENT,
  NOT_FOUND,
  UNAVAILABLE,
  invalidArgument,
};
