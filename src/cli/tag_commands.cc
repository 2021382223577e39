#include "tag_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>
#include <vector>

#include "exit_codes.h"

namespace snowid::cli {
namespace {

// A tag's fields as the node's JSON has them (tag_routes.h), in the order
// the text output prints them.
struct TagField {
  std::string_view name;
  nlohmann::json::value_t type;
};
constexpr std::array<TagField, 10> kTagFields{{
    {"tag", nlohmann::json::value_t::string},
    {"template", nlohmann::json::value_t::string},
    {"zone", nlohmann::json::value_t::string},
    {"business_step", nlohmann::json::value_t::number_integer},
    {"step", nlohmann::json::value_t::number_integer},
    {"max_id", nlohmann::json::value_t::number_integer},
    {"retired", nlohmann::json::value_t::boolean},
    {"version", nlohmann::json::value_t::number_integer},
    {"description", nlohmann::json::value_t::string},
    {"updated_at", nlohmann::json::value_t::string},
}};

// Whether `value` is a tag as the node answers one: every field, of its type.
bool is_tag(const nlohmann::json& value) {
  if (!value.is_object()) return false;
  for (const TagField& field : kTagFields) {
    const auto found = value.find(field.name);
    if (found == value.end()) return false;
    const bool integer = field.type == nlohmann::json::value_t::number_integer;
    if (integer ? !found->is_number_integer() : found->type() != field.type) return false;
  }
  return true;
}

// A field's value as text: strings without their quotes.
std::string field_text(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

void print_tag(const nlohmann::json& tag) {
  for (const TagField& field : kTagFields) {
    std::printf("%-14s %s\n", std::string(field.name).c_str(),
                field_text(tag[std::string(field.name)]).c_str());
  }
}

// The tags as a table: a header, then one tag a row, columns aligned.
void print_tag_table(const nlohmann::json& tags) {
  constexpr std::array<std::string_view, 7> kColumns{"tag",    "template", "zone",   "business_step",
                                                     "max_id", "retired",  "version"};
  std::vector<std::array<std::string, kColumns.size()>> rows(1);
  for (std::size_t c = 0; c < kColumns.size(); ++c) rows[0][c] = kColumns[c];
  for (const auto& tag : tags) {
    auto& row = rows.emplace_back();
    for (std::size_t c = 0; c < kColumns.size(); ++c) {
      row[c] = field_text(tag[std::string(kColumns[c])]);
    }
  }
  std::array<std::size_t, kColumns.size()> widths{};
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += c + 1 < row.size() ? fmt::format("{:<{}}  ", row[c], widths[c]) : row[c];
    }
    std::printf("%s\n", line.c_str());
  }
}

// A reply the node should not have sent: exit 1, never printed.
int bad_answer(std::string_view what) {
  return report_error(
      Error{ErrorCode::kUnavailable, fmt::format("the node's answer is not {}", what)});
}

}  // namespace

TagCommands::TagCommands(CLI::App& app) {
  tag_ = app.add_subcommand("tag", "Administer a running node's tags (admin token)");
  tag_->require_subcommand(1);
  create_ = tag_->add_subcommand("create", "Create a tag, plain or with a business ID template");
  list_ = tag_->add_subcommand("list", "List the tags (at most 1000)");
  show_ = tag_->add_subcommand("show", "Show a tag");
  change_ = tag_->add_subcommand("change", "Change a tag's step, template or zone");
  retire_ = tag_->add_subcommand("retire", "Retire a tag: its numbers are never handed out again");
  business_ = app.add_subcommand("business", "Take business IDs of a tag from a running node");
  for (CLI::App* command : {create_, list_, show_, change_, retire_, business_}) {
    add_node_options(*command, node_);
    command->add_flag("--json", json_, "Print the node's JSON");
    if (command != list_) command->add_option("TAG", tag_name_, "The tag")->required();
  }
  create_->add_option("--start", start_, "The first number")->capture_default_str();
  for (CLI::App* command : {create_, change_}) {
    command->add_option("--step", step_, "The range a node takes at a time");
    command->add_option("--template", template_,
                        "Business ID template, e.g. 'ORD-{yyyyMMdd}-{seq:06}'");
    command->add_option("--zone", zone_, "The template's time zone (default UTC)");
  }
  create_->add_option("--description", description_, "What the tag is for");
  business_->add_option("--count", count_, "How many IDs (1 to the node's max_batch)")
      ->check(CLI::Range(1u, 1u << 30));
}

bool TagCommands::parsed() const { return tag_->parsed() || business_->parsed(); }

int TagCommands::run() const { return business_->parsed() ? run_business() : run_tag_call(); }

int TagCommands::run_tag_call() const {
  const std::string target = "/v1/tags/" + path_segment(tag_name_);
  std::string_view method = "GET";
  std::string_view path = target;
  nlohmann::json body = nlohmann::json::object();
  // What a command sets: only the options given.
  const auto given = [](const CLI::App* command, const char* option) {
    return command->count(option) > 0;
  };
  const CLI::App* settings = create_->parsed() ? create_ : change_;
  if (given(settings, "--step")) body["step"] = step_;
  if (given(settings, "--template")) body["template"] = template_;
  if (given(settings, "--zone")) body["zone"] = zone_;
  if (create_->parsed()) {
    method = "POST";
    path = "/v1/tags";
    body["tag"] = tag_name_;
    if (given(create_, "--start")) body["start"] = start_;
    if (given(create_, "--description")) body["description"] = description_;
  } else if (change_->parsed()) {
    if (body.empty()) {
      return report_error(invalid_argument("tag change needs --step, --template or --zone"));
    }
    method = "PATCH";
  } else if (retire_->parsed()) {
    method = "DELETE";
  } else if (list_->parsed()) {
    path = "/v1/tags";
  }
  const bool sends_body = create_->parsed() || change_->parsed();
  auto reply = call_node(node_, method, path, sends_body ? body.dump() : std::string());
  if (!reply.ok()) return report_error(reply.error());
  if (list_->parsed()) {
    const auto tags = reply->body.find("tags");
    if (tags == reply->body.end() || !tags->is_array() ||
        !std::all_of(tags->begin(), tags->end(), is_tag)) {
      return bad_answer("a list of tags");
    }
    json_ ? (void)std::printf("%s\n", reply->body.dump(2).c_str()) : print_tag_table(*tags);
    return 0;
  }
  if (!is_tag(reply->body)) return bad_answer("a tag");
  json_ ? (void)std::printf("%s\n", reply->body.dump(2).c_str()) : print_tag(reply->body);
  return 0;
}

int TagCommands::run_business() const {
  const bool counted = business_->count("--count") > 0;
  std::string target = "/v1/business/" + path_segment(tag_name_);
  if (counted) target += fmt::format("?count={}", count_);
  auto reply = call_node(node_, "GET", target);
  if (!reply.ok()) return report_error(reply.error());
  std::vector<std::string> ids;
  const auto many = reply->body.find("ids");
  const auto one = reply->body.find("id");
  if (counted && many != reply->body.end() && many->is_array() && many->size() == count_) {
    for (const auto& id : *many) {
      if (!id.is_string()) return bad_answer("a list of business IDs");
      ids.push_back(id.get<std::string>());
    }
  } else if (!counted && one != reply->body.end() && one->is_string()) {
    ids.push_back(one->get<std::string>());
  } else {
    return bad_answer(counted ? fmt::format("{} business IDs", count_) : "a business ID");
  }
  if (json_) {
    std::printf("%s\n", reply->body.dump().c_str());
  } else {
    for (const std::string& id : ids) std::printf("%s\n", id.c_str());
  }
  return 0;
}

}  // namespace snowid::cli
