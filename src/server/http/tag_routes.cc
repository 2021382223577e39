#include "tag_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_target.h"

namespace snowid::server {
namespace {

nlohmann::json tag_json(const tags::TagView& view) {
  return nlohmann::json{{"tag", view.tag},
                        {"max_id", view.max_id},
                        {"step", view.step},
                        {"description", view.description},
                        {"updated_at", view.updated_at},
                        {"template", view.settings.template_text},
                        {"zone", view.settings.zone},
                        {"business_step", view.settings.step},
                        {"retired", view.settings.retired},
                        {"version", view.settings.version}};
}

// The request's body as a JSON object whose keys are all `allowed`.
Result<nlohmann::json> body_object(std::string_view body,
                                   std::initializer_list<std::string_view> allowed) {
  // A key given twice would otherwise count only the last time.
  std::vector<std::string> keys;
  bool repeated = false;
  const nlohmann::json::parser_callback_t note_keys =
      [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
        if (depth == 1 && event == nlohmann::json::parse_event_t::key) {
          const std::string key = parsed.get<std::string>();
          repeated = repeated || std::find(keys.begin(), keys.end(), key) != keys.end();
          keys.push_back(key);
        }
        return true;
      };
  nlohmann::json parsed = nlohmann::json::parse(body, note_keys, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return invalid_argument("the request body must be a JSON object");
  }
  if (repeated) return invalid_argument("a key is given twice in the request body");
  for (const auto& [key, value] : parsed.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return invalid_argument(
          fmt::format("unknown key '{}' in the request body", std::string_view(key).substr(0, 40)));
    }
  }
  return parsed;
}

Status read_text(const nlohmann::json& body, std::string_view key, std::string& out) {
  const auto found = body.find(key);
  if (found == body.end()) return {};
  if (!found->is_string()) return invalid_argument(fmt::format("'{}' must be a string", key));
  out = found->get<std::string>();
  return {};
}

Status read_integer(const nlohmann::json& body, std::string_view key, std::int64_t& out) {
  const auto found = body.find(key);
  if (found == body.end()) return {};
  if (!found->is_number_integer()) {
    return invalid_argument(fmt::format("'{}' must be an integer", key));
  }
  if (found->is_number_unsigned() &&
      found->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    return invalid_argument(fmt::format("'{}' exceeds 2^63-1", key));
  }
  out = found->get<std::int64_t>();
  return {};
}

void answer_view(const Answer& answer, const tags::TagView& view, unsigned status,
                 HttpResponse& response) {
  if (!answer.ok()) return set_refusal(response, answer);
  response.status = status;
  set_json(response, tag_json(view));
}

void create(const RouteRequest& request, HttpResponse& response) {
  auto body = body_object(request.http.body,
                          {"tag", "start", "step", "description", "template", "zone"});
  if (!body.ok()) return set_invalid(response, body.error());
  tags::TagCreation creation;
  if (!body->contains("tag")) return set_invalid(response, invalid_argument("'tag' is required"));
  for (Status read : {read_text(*body, "tag", creation.tag),
                      read_integer(*body, "start", creation.start),
                      read_integer(*body, "step", creation.step),
                      read_text(*body, "description", creation.description),
                      read_text(*body, "template", creation.template_text),
                      read_text(*body, "zone", creation.zone)}) {
    if (!read.ok()) return set_invalid(response, read.error());
  }
  tags::TagView view;
  answer_view(request.service.create_tag(request.caller(), creation, view), view, 201, response);
}

void change(const RouteRequest& request, HttpResponse& response) {
  auto body = body_object(request.http.body, {"step", "template", "zone"});
  if (!body.ok()) return set_invalid(response, body.error());
  tags::TagChange change;
  if (body->contains("step")) {
    std::int64_t step = 0;
    if (Status read = read_integer(*body, "step", step); !read.ok()) {
      return set_invalid(response, read.error());
    }
    change.step = step;
  }
  for (auto [key, field] : {std::pair{"template", &change.template_text},
                            std::pair{"zone", &change.zone}}) {
    if (!body->contains(key)) continue;
    std::string text;
    if (Status read = read_text(*body, key, text); !read.ok()) {
      return set_invalid(response, read.error());
    }
    *field = std::move(text);
  }
  tags::TagView view;
  answer_view(request.service.change_tag(request.caller(), request.tail, change, view), view, 200,
              response);
}

}  // namespace

void answer_business(const RouteRequest& request, HttpResponse& response) {
  auto count = parse_count(request.target);
  if (!count.ok()) return set_invalid(response, count.error());
  std::string_view agent = request.http.agent_header;
  if (auto it = request.target.query.find("agent"); it != request.target.query.end()) {
    agent = it->second;
  }
  const BusinessRequest business{request.caller(), agent, request.tail, count->value_or(1)};
  thread_local std::vector<std::string> ids;
  ids.clear();
  Answer answer = request.service.next_business_ids(business, ids);
  if (!answer.ok()) return set_refusal(response, answer);
  // Written by hand: a batch's strings are appended without building a JSON
  // value of them. Their characters are a template's (UTF-8 without
  // control characters, business_format.h), so '"' and '\\' are all that
  // need escaping; the tag, any name, goes through nlohmann.
  std::string& out = response.body;
  out = R"({"tag":)";
  out += nlohmann::json(request.tail).dump(-1, ' ', false,
                                           nlohmann::json::error_handler_t::replace);
  out += *count ? R"(,"ids":[)" : R"(,"id":)";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (const char c : ids[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += *count ? "]}\n" : "}\n";
}

void answer_tags(const RouteRequest& request, HttpResponse& response) {
  if (request.http.method == "POST") return create(request, response);
  std::vector<tags::TagView> views;
  Answer answer = request.service.list_tags(request.caller(), views);
  if (!answer.ok()) return set_refusal(response, answer);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& view : views) list.push_back(tag_json(view));
  set_json(response, nlohmann::json{{"tags", std::move(list)}});
}

void answer_tag(const RouteRequest& request, HttpResponse& response) {
  if (request.http.method == "PATCH") return change(request, response);
  tags::TagView view;
  if (request.http.method == "DELETE") {
    return answer_view(request.service.retire_tag(request.caller(), request.tail, view), view, 200,
                       response);
  }
  answer_view(request.service.show_tag(request.caller(), request.tail, view), view, 200, response);
}

}  // namespace snowid::server
