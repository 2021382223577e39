// deploy/grafana/snowid-dashboard.json against a real snowidd with every
// part that has metrics turned on (cluster mode on a real Redis, segment mode
// on SQLite, the audit log, the Thrift and RESP listeners): the dashboard is
// a well-formed Grafana dashboard, every metric its PromQL names is one the
// node exports (a histogram's _bucket, _sum and _count included), every label
// it groups, matches or names a legend by is one those metrics carry, and
// every metric family the node exports has a panel.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "chaos.h"
#include "http_checks.h"
#include "redis_process.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::http_get;

// What a PromQL expression refers to.
struct QueryNames {
  std::set<std::string> metrics;        // metric names written as such
  std::set<std::string> name_patterns;  // regexes of {__name__=~"..."}
  std::set<std::string> labels;         // in matchers and by/without/on/ignoring lists
};

bool identifier_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool identifier_part(char c) {
  return identifier_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

// Reads PromQL enough to tell metric names from functions, aggregations,
// keywords, label names, strings, numbers, ranges and Grafana's $variables.
// Fails the test on what it cannot read.
QueryNames names_in(const std::string& expr) {
  static const std::set<std::string> kAggregations{"sum",     "min",      "max",          "avg",
                                                   "count",   "stddev",   "stdvar",       "topk",
                                                   "bottomk", "quantile", "count_values", "group"};
  static const std::set<std::string> kLabelLists{"by",       "without",    "on",
                                                 "ignoring", "group_left", "group_right"};
  static const std::set<std::string> kKeywords{"and", "or", "unless", "bool", "offset"};
  QueryNames out;
  std::size_t i = 0;
  const auto skip_space = [&] {
    while (i < expr.size() && std::isspace(static_cast<unsigned char>(expr[i]))) ++i;
  };
  const auto read_identifier = [&] {
    const std::size_t start = i;
    while (i < expr.size() && identifier_part(expr[i])) ++i;
    return expr.substr(start, i - start);
  };
  const auto read_string = [&] {  // at the opening quote
    const char quote = expr[i++];
    std::string value;
    while (i < expr.size() && expr[i] != quote) {
      if (expr[i] == '\\' && i + 1 < expr.size()) ++i;
      value += expr[i++];
    }
    ++i;
    return value;
  };
  while (i < expr.size()) {
    const char c = expr[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '"' || c == '\'') {
      read_string();
    } else if (c == '[') {
      i = expr.find(']', i);
      if (i == std::string::npos) ADD_FAILURE() << "unclosed [ in " << expr;
      if (i == std::string::npos) break;
      ++i;
    } else if (c == '$') {
      ++i;
      read_identifier();
    } else if (c == '{') {
      ++i;
      for (skip_space(); i < expr.size() && expr[i] != '}'; skip_space()) {
        const std::string label = read_identifier();
        skip_space();
        const std::size_t op_start = i;
        while (i < expr.size() && (expr[i] == '=' || expr[i] == '!' || expr[i] == '~')) ++i;
        const std::string op = expr.substr(op_start, i - op_start);
        skip_space();
        if (label.empty() || op.empty() || i >= expr.size() || expr[i] != '"') {
          ADD_FAILURE() << "cannot read the matchers of " << expr;
          return out;
        }
        const std::string value = read_string();
        if (label == "__name__") {
          (op == "=~" ? out.name_patterns : out.metrics).insert(value);
        } else {
          out.labels.insert(label);
        }
        skip_space();
        if (i < expr.size() && expr[i] == ',') ++i;
      }
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      while (i < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.')) {
        ++i;
      }
    } else if (identifier_start(c)) {
      const std::string word = read_identifier();
      skip_space();
      if (kLabelLists.count(word)) {
        if (i < expr.size() && expr[i] == '(') {
          ++i;
          for (skip_space(); i < expr.size() && expr[i] != ')'; skip_space()) {
            const std::string label = read_identifier();
            if (label.empty()) {
              ADD_FAILURE() << "cannot read the label list of " << expr;
              return out;
            }
            out.labels.insert(label);
            skip_space();
            if (i < expr.size() && expr[i] == ',') ++i;
          }
          ++i;
        }
      } else if (!kAggregations.count(word) && !kKeywords.count(word) &&
                 (i >= expr.size() || expr[i] != '(')) {
        out.metrics.insert(word);
      }
    } else {
      ++i;  // operators, parentheses, commas
    }
  }
  return out;
}

// The metric names and labels of an exposition: each family's samples'
// names (a histogram's _bucket, _sum, _count) and their label names.
struct Exposition {
  std::set<std::string> families;                        // from # TYPE lines
  std::map<std::string, std::set<std::string>> samples;  // name -> its labels
};

Exposition read_exposition(const std::string& text) {
  Exposition out;
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$)");
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? \S+$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*")re");
  for (const std::string& line : test::split_lines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, kType)) {
      out.families.insert(m[1]);
    } else if (std::regex_match(line, m, kSample)) {
      auto& labels = out.samples[m[1]];
      const std::string list = m[3];
      for (auto it = std::sregex_iterator(list.begin(), list.end(), kLabel);
           it != std::sregex_iterator(); ++it) {
        labels.insert((*it)[1]);
      }
    }
  }
  return out;
}

nlohmann::json read_dashboard() {
  std::ifstream in(SNOWID_DASHBOARD_PATH);
  EXPECT_TRUE(in.good()) << SNOWID_DASHBOARD_PATH;
  return nlohmann::json::parse(in, nullptr, false);
}

TEST(GrafanaDashboard, ReadsAsPromQlTokens) {
  const QueryNames names = names_in(
      R"(histogram_quantile(0.99, sum by (le, protocol) (rate(a_bucket{job=~"$job",x!="}"}[$__rate_interval]))) / on (instance) b - time() + {__name__=~"c_.*"} * 1e3)");
  EXPECT_EQ(names.metrics, (std::set<std::string>{"a_bucket", "b"}));
  EXPECT_EQ(names.name_patterns, (std::set<std::string>{"c_.*"}));
  EXPECT_EQ(names.labels, (std::set<std::string>{"le", "protocol", "job", "x", "instance"}));
}

TEST(GrafanaDashboard, IsAWellFormedDashboard) {
  const nlohmann::json dashboard = read_dashboard();
  ASSERT_TRUE(dashboard.is_object()) << "not JSON";
  EXPECT_EQ(dashboard.value("uid", ""), "snowid-overview");
  EXPECT_TRUE(dashboard["schemaVersion"].is_number_integer());
  ASSERT_TRUE(dashboard["panels"].is_array());
  std::set<int> ids;
  std::set<std::string> variables;
  for (const auto& variable : dashboard["templating"]["list"]) variables.insert(variable["name"]);
  EXPECT_EQ(variables, (std::set<std::string>{"datasource", "job", "instance"}));
  int charts = 0;
  for (const auto& panel : dashboard["panels"]) {
    const std::string title = panel.value("title", "");
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "id repeated: " << title;
    const auto& grid = panel["gridPos"];
    EXPECT_GE(grid["x"].get<int>(), 0) << title;
    EXPECT_LE(grid["x"].get<int>() + grid["w"].get<int>(), 24) << title;
    if (panel["type"] == "row") continue;
    ++charts;
    EXPECT_EQ(panel["datasource"]["uid"], "${datasource}") << title;
    ASSERT_TRUE(panel["targets"].is_array() && !panel["targets"].empty()) << title;
    std::set<std::string> references;
    for (const auto& target : panel["targets"]) {
      EXPECT_FALSE(target.value("expr", "").empty()) << title;
      EXPECT_TRUE(references.insert(target["refId"].get<std::string>()).second) << title;
      // Every query keeps to the chosen job and instances.
      EXPECT_NE(target["expr"].get<std::string>().find(R"(instance=~"$instance")"),
                std::string::npos)
          << title;
    }
  }
  EXPECT_GE(charts, 25);
}

TEST(GrafanaDashboard, EveryMetricItQueriesIsExported) {
  const nlohmann::json dashboard = read_dashboard();
  ASSERT_TRUE(dashboard.is_object());

  test::TempDir dir;
  test::RedisServer redis;
  ASSERT_TRUE(redis.started()) << redis.why();
  redis.cli({"SET", "snowid:{c}:created", "0"});  // a new cluster: no wait ahead of the clock
  const std::string store = "sqlite://" + dir.file("segments.db");
  const auto created =
      test::run_process({SNOWID_CLI_PATH, "segment", "create", "order", "--segment-store", store});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto server =
      test::start(dir, {"--coordinator", "redis", "--redis-endpoints", redis.endpoint(),
                        "--cluster", "c", "--segment-store", store, "--audit-log",
                        dir.file("audit.log"), "--resp", "127.0.0.1:0", "--thrift", "127.0.0.1:0"});
  ASSERT_TRUE(server->started());
  const int port = server->port();
  ASSERT_TRUE(test::wait_until([&] { return http_get(port, "/readyz").status == 200; },
                               std::chrono::seconds{20}))
      << server->log();
  // A call of each kind, so that the labelled series exist.
  EXPECT_EQ(http_get(port, "/v1/id?agent=dashboard").status, 200);
  EXPECT_EQ(http_get(port, "/v1/segment/order").status, 200);
  const std::string tag = R"({"tag": "invoice", "template": "INV{seq:06}"})";
  const auto business = test::http_raw(
      port, "POST /v1/tags HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                std::to_string(tag.size()) + "\r\n\r\n" + tag);
  EXPECT_EQ(business.status, 201) << business.body;
  EXPECT_EQ(http_get(port, "/v1/business/invoice").status, 200);
  EXPECT_EQ(http_get(port, "/v1/ids").status, 400);
  const Exposition exported = read_exposition(http_get(port, "/metrics").body);
  ASSERT_FALSE(exported.samples.empty());

  std::set<std::string> covered;  // families the dashboard shows
  const auto check = [&](const std::string& expr, const std::string& legend,
                         const std::string& where) {
    const QueryNames names = names_in(expr);
    std::set<std::string> labels{"job", "instance", "le", "__name__"};
    for (const std::string& metric : names.metrics) {
      const auto it = exported.samples.find(metric);
      EXPECT_NE(it, exported.samples.end()) << where << ": " << metric << " is not exported";
      if (it != exported.samples.end()) labels.insert(it->second.begin(), it->second.end());
      for (const std::string& family : exported.families) {
        if (metric == family || metric.rfind(family + "_", 0) == 0) covered.insert(family);
      }
    }
    for (const std::string& pattern : names.name_patterns) {
      const std::regex re(pattern);
      bool matched = false;
      for (const auto& [name, sample_labels] : exported.samples) {
        if (!std::regex_match(name, re)) continue;
        matched = true;
        labels.insert(sample_labels.begin(), sample_labels.end());
        if (exported.families.count(name)) covered.insert(name);
      }
      EXPECT_TRUE(matched) << where << ": no exported metric matches " << pattern;
    }
    for (const std::string& label : names.labels) {
      EXPECT_TRUE(labels.count(label)) << where << ": no metric it queries has label " << label;
    }
    static const std::regex kLegendLabel(R"(\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\})");
    for (auto it = std::sregex_iterator(legend.begin(), legend.end(), kLegendLabel);
         it != std::sregex_iterator(); ++it) {
      EXPECT_TRUE(labels.count((*it)[1])) << where << ": legend names label " << (*it)[1];
    }
  };
  for (const auto& panel : dashboard["panels"]) {
    if (!panel.contains("targets")) continue;
    for (const auto& target : panel["targets"]) {
      check(target["expr"], target.value("legendFormat", ""),
            panel["title"].get<std::string>() + " " + target["refId"].get<std::string>());
    }
  }
  for (const auto& variable : dashboard["templating"]["list"]) {
    if (variable["type"] != "query") continue;
    std::smatch m;
    const std::string query = variable["query"]["query"];
    ASSERT_TRUE(std::regex_match(query, m, std::regex(R"(label_values\((.*), (\w+)\))"))) << query;
    check(m[1], "{{" + std::string(m[2]) + "}}", "variable " + variable["name"].get<std::string>());
  }
  for (const std::string& family : exported.families) {
    EXPECT_TRUE(covered.count(family)) << family << " is exported but has no panel";
  }
}

}  // namespace
}  // namespace snowid
