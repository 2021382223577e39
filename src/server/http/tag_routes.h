// The HTTP routes of business IDs and tag administration (RouteHandlers of
// http_routes.h, on IdService's calls of tags/tag_book.h):
//   GET    /v1/business/{tag}[?count=N]  {"tag", "id"} or {"tag", "ids": [...]}
//   GET    /v1/tags                      {"tags": [tag, ...]}          (admin token)
//   POST   /v1/tags                      creates: {"tag", "start", "step", "description",
//                                        "template", "zone"} -> 201 and the tag
//   GET    /v1/tags/{tag}                the tag
//   PATCH  /v1/tags/{tag}                changes: {"step", "template", "zone"} (any of them)
//   DELETE /v1/tags/{tag}                retires it (its numbers are never handed out again)
// A tag answers as {"tag", "max_id", "step", "description", "updated_at",
// "template", "zone", "business_step", "retired", "version"}. A body that is
// not a JSON object of those keys, with the right types, is a 400 naming the key.
#pragma once

#include "http_routes.h"

namespace snowid::server {

void answer_business(const RouteRequest& request, HttpResponse& response);
void answer_tags(const RouteRequest& request, HttpResponse& response);
void answer_tag(const RouteRequest& request, HttpResponse& response);

}  // namespace snowid::server
