// The handlers of snowid's own HTTP routes, and of Leaf's two ID routes
// /api/snowflake/get/{key} and /api/segment/get/{tag} (the paths, parameters
// and answers are listed in http_routes.h). Each is a RouteHandler, a row's
// handler in the route table: it answers a request whose token and parameter
// names handle_http() has already checked. Safe to call from any thread.
#pragma once

#include "http_routes.h"

namespace snowid::server {

// GET /v1/id, /api/snowflake/get/{key}, /v1/ids?count=N.
void answer_id(const RouteRequest& request, HttpResponse& response);
void answer_leaf_snowflake(const RouteRequest& request, HttpResponse& response);
void answer_ids(const RouteRequest& request, HttpResponse& response);
// GET /v1/uuid, /v1/ulid, /v1/objectid [?count=N], the kind by the route.
void answer_formatted(const RouteRequest& request, HttpResponse& response);
// GET /v1/segment/{tag}[?count=N] and /api/segment/get/{tag}.
void answer_segment(const RouteRequest& request, HttpResponse& response);
// GET /v1/decode/{id}.
void answer_decode(const RouteRequest& request, HttpResponse& response);
// GET /v1/opaque/encode/{id} and /v1/opaque/decode/{opaque}.
void answer_opaque(const RouteRequest& request, HttpResponse& response);
// GET /v1/info.
void answer_info(const RouteRequest& request, HttpResponse& response);

// The public probes and /metrics.
void answer_healthz(const RouteRequest& request, HttpResponse& response);
void answer_readyz(const RouteRequest& request, HttpResponse& response);
void answer_readyz_segment(const RouteRequest& request, HttpResponse& response);
void answer_metrics(const RouteRequest& request, HttpResponse& response);

}  // namespace snowid::server
