#include "status_page.h"

#include "status_page_html.h"  // generated from status_page.html

namespace snowid::server {

void answer_status_page(const RouteRequest& /*request*/, HttpResponse& response) {
  response.content_type = "text/html; charset=utf-8";
  response.body.assign(kStatusPageHtml);
  response.headers.emplace_back("Content-Security-Policy", kStatusPagePolicy);
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.headers.emplace_back("Referrer-Policy", "no-referrer");
}

}  // namespace snowid::server
