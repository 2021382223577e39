// Leaf's /decodeSnowflakeId, /cache and /db (see leaf_monitor_routes.h).
//
// /cache and /db build one Table and render it either as JSON or as an HTML
// page; every value that reaches the page goes through append_html_escaped,
// since tags and descriptions come from the store, and the page loads nothing
// else (no scripts, styles or images).
#include "leaf_monitor_routes.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "node_id.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace snowid::server {
namespace {

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The q parameter among a media range's `parameters` (";q=0.8;level=1");
// 1 if absent or malformed, as if it were not there.
double quality(std::string_view parameters) {
  while (!parameters.empty()) {
    parameters.remove_prefix(1);  // the ';'
    const auto next = parameters.find(';');
    const std::string_view parameter = trim(parameters.substr(0, next));
    parameters = next == std::string_view::npos ? std::string_view{} : parameters.substr(next);
    if (parameter.size() < 2 || (parameter[0] != 'q' && parameter[0] != 'Q') ||
        parameter[1] != '=') {
      continue;
    }
    const std::string_view value = parameter.substr(2);
    double q = 1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), q);
    if (ec != std::errc{} || end != value.data() + value.size() || !(q >= 0 && q <= 1)) return 1;
    return q;
  }
  return 1;
}

// The weight `accept` gives the media type `type` ("text/html"): the q of the
// most specific range that matches it (type/subtype, then type/*, then */*),
// 0 if none does.
double accept_weight(std::string_view accept, std::string_view type) {
  const std::string_view main_type = type.substr(0, type.find('/') + 1);  // "text/"
  int best = -1;  // specificity of the range whose q is taken
  double weight = 0;
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    const std::string_view element = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    const auto semicolon = std::min(element.find(';'), element.size());
    const std::string_view range = trim(element.substr(0, semicolon));
    int specificity = -1;
    if (equal_ignoring_case(range, type)) {
      specificity = 2;
    } else if (range.size() == main_type.size() + 1 && range.back() == '*' &&
               equal_ignoring_case(range.substr(0, main_type.size()), main_type)) {
      specificity = 1;
    } else if (range == "*/*") {
      specificity = 0;
    }
    if (specificity <= best) continue;
    best = specificity;
    weight = quality(element.substr(semicolon));
  }
  return weight;
}

void append_html_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
}

// A cell as text: strings as they are, anything else as JSON writes it.
std::string cell_text(const nlohmann::json& cell) {
  if (cell.is_string()) return cell.get<std::string>();
  return cell.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// What /cache and /db show: rows of cells in column order, and a few facts
// about the rows as a whole.
struct Table {
  std::string_view title;      // of the HTML page
  std::string_view rows_name;  // of the JSON array
  std::span<const std::string_view> columns;
  std::vector<std::vector<nlohmann::json>> rows;      // each of columns.size() cells
  nlohmann::json summary = nlohmann::json::object();  // JSON: beside the rows; HTML: above
};

void set_table_json(const Table& table, HttpResponse& response) {
  nlohmann::json body = table.summary;
  nlohmann::json& rows = body[std::string(table.rows_name)] = nlohmann::json::array();
  for (const auto& row : table.rows) {
    nlohmann::json& object = rows.emplace_back(nlohmann::json::object());
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      object[std::string(table.columns[i])] = row[i];
    }
  }
  set_json(response, body);
}

void set_table_html(const Table& table, HttpResponse& response) {
  response.content_type = "text/html; charset=utf-8";
  std::string& out = response.body;
  out += "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>";
  append_html_escaped(out, table.title);
  out += "</title></head>\n<body>\n<h1>";
  append_html_escaped(out, table.title);
  out += "</h1>\n<p>";
  bool first = true;
  for (const auto& [name, value] : table.summary.items()) {
    if (!first) out += ", ";
    first = false;
    append_html_escaped(out, name);
    out += ": ";
    append_html_escaped(out, cell_text(value));
  }
  out += "</p>\n<table border=\"1\">\n<tr>";
  for (std::string_view column : table.columns) {
    out += "<th>";
    append_html_escaped(out, column);
    out += "</th>";
  }
  out += "</tr>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const nlohmann::json& cell : row) {
      out += "<td>";
      append_html_escaped(out, cell_text(cell));
      out += "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n</body></html>\n";
}

// Leaf's time text, in UTC: "2019-09-06 09:35:00.834" for format_time's
// "2019-09-06T09:35:00.834Z"; a time format_time writes otherwise (years
// beyond 9999) as it writes it.
std::string leaf_time(std::chrono::milliseconds unix_time) {
  std::string text = format_time(unix_time);
  if (text.size() == 24 && text[10] == 'T' && text.back() == 'Z') {
    text[10] = ' ';
    text.pop_back();
  }
  return text;
}

// A table as the request's Accept header prefers it.
void set_table(const Table& table, const HttpRequest& request, HttpResponse& response) {
  if (prefers_html(request.accept)) return set_table_html(table, response);
  set_table_json(table, response);
}

// Leaf's SegmentBufferView, then snowid's extras. Leaf's `pos` is the index
// of the current one of its two segments; snowid always shows the current
// range first, as segment 0.
constexpr std::array<std::string_view, 15> kCacheColumns{
    "key",  "initOk",         "pos",          "nextReady",   "value0",
    "max0", "step0",          "value1",       "max1",        "step1",
    "step", "configuredStep", "fetchPending", "prefetchAt0", "prefetchAt1"};

Table cache_table(const SegmentBuffersSnapshot& snapshot) {
  Table table{"snowid segment cache", "tags", kCacheColumns, {}, {}};
  table.summary = {{"tags_known", snapshot.tags_known},
                   {"truncated", snapshot.tags_known > snapshot.tags.size()}};
  table.rows.reserve(snapshot.tags.size());
  for (const SegmentBufferState& tag : snapshot.tags) {
    table.rows.push_back({tag.tag, tag.initialized, 0, tag.standby_ready, tag.current.next,
                          tag.current.end, tag.current.size, tag.standby.next, tag.standby.end,
                          tag.standby.size, tag.step, tag.configured_step, tag.fetch_pending,
                          tag.current.prefetch_at, tag.standby.prefetch_at});
  }
  return table;
}

// Leaf's LeafAlloc, and the row's description.
constexpr std::array<std::string_view, 5> kDbColumns{"key", "maxId", "step", "description",
                                                     "updateTime"};

Table db_table(const SegmentStoreRows& store) {
  Table table{"snowid segment store", "rows", kDbColumns, {}, {}};
  table.summary = {{"truncated", store.truncated}};
  table.rows.reserve(store.rows.size());
  for (const SegmentTagRecord& row : store.rows) {
    table.rows.push_back({row.tag, row.max_id, row.step, row.description, row.updated_at});
  }
  return table;
}

}  // namespace

void answer_leaf_decode(const RouteRequest& request, HttpResponse& response) {
  const auto parameter = request.target.query.find("snowflakeId");
  if (parameter == request.target.query.end()) {
    return set_error(response, 400, "snowflakeId is required: a decimal ID from 0 to 2^63-1");
  }
  auto id = parse_id(parameter->second);
  if (!id.ok()) return set_error(response, 400, "snowflakeId: " + id.error().message);
  IdFields fields;
  Answer answer =
      request.service.decode(request.caller(), static_cast<std::uint64_t>(*id), fields);
  if (!answer.ok()) return set_refusal(response, answer);
  // Leaf's three keys and nothing else: its workerId is every node bit of
  // the ID (datacenter << worker_bits | worker: 10 bits under the Twitter
  // layout), as Leaf's SnowflakeIDGenImpl sets it; /v1/decode/{id} keeps the
  // two parts apart.
  const std::uint64_t leaf_worker_id = join_node_id(
      request.service.layout(), {.datacenter_id = fields.datacenter, .worker_id = fields.worker});
  set_json(response, nlohmann::json{
                         {"timestamp", fmt::format("{}({})", fields.timestamp.count(),
                                                   leaf_time(fields.timestamp))},
                         {"workerId", std::to_string(leaf_worker_id)},
                         {"sequenceId", std::to_string(fields.sequence)},
                     });
}

bool prefers_html(std::string_view accept) {
  return accept_weight(accept, "text/html") > accept_weight(accept, "application/json");
}

void answer_leaf_cache(const RouteRequest& request, HttpResponse& response) {
  SegmentBuffersSnapshot snapshot;
  Answer answer = request.service.segment_buffers(request.caller(), snapshot);
  if (!answer.ok()) return set_refusal(response, answer);
  set_table(cache_table(snapshot), request.http, response);
}

void answer_leaf_db(const RouteRequest& request, HttpResponse& response) {
  SegmentStoreRows rows;
  Answer answer = request.service.segment_store_rows(request.caller(), rows);
  if (!answer.ok()) return set_refusal(response, answer);
  set_table(db_table(rows), request.http, response);
}

}  // namespace snowid::server
