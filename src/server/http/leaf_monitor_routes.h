// Meituan Leaf's decoding and monitoring routes, beside its two ID routes
// (http_routes.h), so that Leaf clients and dashboards can point at snowidd:
//
//   GET /decodeSnowflakeId?snowflakeId=N
//       Leaf's keys and meanings, its values as strings: {"timestamp":"<Unix
//       ms>(<UTC yyyy-MM-dd HH:mm:ss.SSS>)","workerId":"…","sequenceId":"…"},
//       decoded under the node's layout. workerId is Leaf's: all the node
//       bits, datacenter << worker_bits | worker (datacenter 2, worker 7 ->
//       71 under the Twitter layout); GET /v1/decode/{id} gives the two apart.
//   GET /cache  each known tag's double buffer, as Leaf's SegmentBufferView
//               (key, initOk, pos, nextReady, value0/max0/step0 of the current
//               range, value1/max1/step1 of the next) and snowid's extras.
//   GET /db     the segment store's rows, as Leaf's LeafAlloc (key, maxId,
//               step, updateTime) plus the description.
//
// /cache and /db list at most kMaxSegmentTagsExported tags; they answer JSON,
// or an HTML page of one table when the Accept header prefers text/html. All
// three need the bearer token when one is set; /cache and /db answer as the
// other segment routes while segment mode is off, /db with 503 while the
// store is down. Errors are {"error":"…"} as on every other route.
#pragma once

#include <string_view>

#include "http_routes.h"

namespace snowid::server {

// Answer a GET or HEAD of one of those routes into `response`: rows of the
// route table (http_routes.cc), the token and parameter names already
// checked by handle_http().
void answer_leaf_decode(const RouteRequest& request, HttpResponse& response);
void answer_leaf_cache(const RouteRequest& request, HttpResponse& response);
void answer_leaf_db(const RouteRequest& request, HttpResponse& response);

// True if `accept` (an Accept header, RFC 9110 12.5.1) gives text/html a
// higher weight than application/json; without the header, or on a tie, JSON.
bool prefers_html(std::string_view accept);

}  // namespace snowid::server
