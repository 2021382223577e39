// snowidd's status page, GET / on the HTTP listener: one HTML page with its
// style and script inline (status_page.html), nothing loaded from elsewhere.
//
// The page is public and holds no data, as /healthz: a browser cannot send a
// bearer token when it navigates. Its script fetches /v1/info, /metrics and,
// in segment mode, /cache with the token (taken from the address's
// #token=... fragment, or typed into the form the page shows after a 401,
// and kept in the tab's sessionStorage), so the node's data stays behind the
// token exactly as for any other client. A fragment never reaches the server
// or its logs.
//
// The response forbids everything the page does not do: a
// Content-Security-Policy with the SHA-256 of the inline style and script
// (computed at build time by status_page_gen.cc), fetches to the same origin
// only, no framing; nosniff; no-cache, so a new snowidd's page is never
// mixed with an old one's.
#pragma once

#include "http_routes.h"

namespace snowid::server {

// Makes `response` the status page (a HEAD's header fields are the same):
// the route table's row for GET /, public, its query ignored.
void answer_status_page(const RouteRequest& request, HttpResponse& response);

}  // namespace snowid::server
