#include "segment_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "exit_codes.h"
#include "snowid/decode.h"
#include "snowid/ext/segment_store.h"

namespace snowid::cli {
namespace {

int report(int code, const Error& error) {
  std::string line = error.message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "snowid: %s\n", line.c_str());
  return code;
}

// Bad input (exit 2) for kInvalidArgument, a failure (exit 1) for the rest.
int report(const Error& error) {
  return report(error.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure, error);
}

Result<std::int64_t> parse_int64(const std::string& text, std::int64_t max, std::string_view what) {
  auto value = parse_unsigned(text, static_cast<std::uint64_t>(max), what);
  if (!value.ok()) return value.error();
  return static_cast<std::int64_t>(*value);
}

Result<std::unique_ptr<SegmentStore>> open_store(const std::string& url) {
  if (url.empty()) {
    // The default state directory is created on demand, like the server's.
    std::error_code ec;
    std::filesystem::create_directories(".snowid", ec);
    if (ec) {
      return Error{ErrorCode::kUnavailable, fmt::format("cannot create .snowid: {}", ec.message())};
    }
    return open_segment_store(kDefaultSegmentStoreUrl);
  }
  return open_segment_store(url);
}

void print_tags(const std::vector<SegmentTagRecord>& records) {
  std::size_t width = 3;
  for (const auto& record : records) width = std::max(width, record.tag.size());
  std::string text = fmt::format("{:<{}}  {:>20}  {:>10}  {:<26}  {}\n", "tag", width, "max_id",
                                 "step", "updated_at (UTC)", "description");
  for (const auto& record : records) {
    text += fmt::format("{:<{}}  {:>20}  {:>10}  {:<26}  {}\n", record.tag, width, record.max_id,
                        record.step, record.updated_at, record.description);
  }
  std::fputs(text.c_str(), stdout);
}

}  // namespace

SegmentCommands::SegmentCommands(CLI::App& app) {
  segment_ = app.add_subcommand("segment", "Manage segment-mode tags (dense numbers per tag)");
  segment_->require_subcommand(1);
  const std::string store_help =
      "Store URL: sqlite:///abs/path.db, sqlite://relative.db, "
      "postgresql://user@host:port/db or mysql://user@host:port/db[?layout=leaf] "
      "(default sqlite://.snowid/segments.db)";

  create_ = segment_->add_subcommand("create", "Add a tag");
  create_->add_option("tag", tag_,
                      "Tag name: 1 to 128 characters of UTF-8, no control character, no '#' first")
      ->required();
  create_->add_option("--start", start_, "First number the tag hands out")->default_str("1");
  create_->add_option("--step", step_, "Smallest range a node takes at once")->default_str("1000");
  create_->add_option("--description", description_, "Free text, at most 256 bytes");
  create_->add_option("--segment-store", store_url_, store_help);

  list_ = segment_->add_subcommand("list", "Show every tag");
  list_->add_option("--segment-store", store_url_, store_help);

  set_step_ = segment_->add_subcommand("set-step", "Change a tag's configured step");
  set_step_->add_option("tag", tag_, "Tag name")->required();
  set_step_->add_option("step", new_step_, "New step")->required();
  set_step_->add_option("--segment-store", store_url_, store_help);

  ticket_init_ = segment_->add_subcommand(
      "ticket-init",
      "Make an empty store ticket server OFFSET of INCREMENT: it hands out only numbers n with "
      "n % INCREMENT == OFFSET; list such stores separated by spaces as segment_store");
  ticket_init_->add_option("--increment", increment_, "Stores in the set (2..64)")->required();
  ticket_init_->add_option("--offset", offset_,
                           "This store's remainder (0..INCREMENT-1), or MySQL's 1-based "
                           "auto_increment_offset (1..INCREMENT: INCREMENT means remainder 0)")
      ->required();
  ticket_init_->add_option("--segment-store", store_url_, store_help);
}

bool SegmentCommands::parsed() const { return segment_->parsed(); }

int SegmentCommands::run() const {
  // Validate everything the user typed before touching the store.
  if (create_->parsed() || set_step_->parsed()) {
    if (Status valid = validate_segment_tag(tag_); !valid.ok()) return report(valid.error());
  }
  std::int64_t start = 0, step = 0;
  if (create_->parsed()) {
    auto parsed_start = parse_int64(start_, std::numeric_limits<std::int64_t>::max(), "--start");
    if (!parsed_start.ok()) return report(parsed_start.error());
    auto parsed_step = parse_int64(step_, kMaxSegmentStep, "--step");
    if (!parsed_step.ok()) return report(parsed_step.error());
    start = *parsed_start;
    step = *parsed_step;
  }
  if (set_step_->parsed()) {
    auto parsed_step = parse_int64(new_step_, kMaxSegmentStep, "step");
    if (!parsed_step.ok()) return report(parsed_step.error());
    step = *parsed_step;
  }

  TicketIdentity identity;
  if (ticket_init_->parsed()) {
    auto increment = parse_int64(increment_, kMaxTicketIncrement, "--increment");
    if (!increment.ok()) return report(increment.error());
    auto offset = parse_int64(offset_, kMaxTicketIncrement, "--offset");
    if (!offset.ok()) return report(offset.error());
    auto from_offset = ticket_identity_from_offset(*increment, *offset);
    if (!from_offset.ok()) return report(from_offset.error());
    identity = *from_offset;
    if (identity.increment < 2) {
      return report(invalid_argument("--increment must be at least 2 (a set of stores)"));
    }
  }

  auto store = open_store(store_url_);
  if (!store.ok()) return report(store.error());

  if (create_->parsed()) {
    Status created = (*store)->create_tag(tag_, start, step, description_);
    if (!created.ok()) return report(created.error());
    std::printf("created tag %s: first number %lld, step %lld\n", tag_.c_str(),
                static_cast<long long>(start), static_cast<long long>(step));
  } else if (ticket_init_->parsed()) {
    Status recorded = (*store)->set_ticket_identity(identity);
    if (!recorded.ok()) return report(recorded.error());
    std::printf(
        "ticket server %lld of %lld: hands out numbers n with n %% %lld == %lld\n",
        static_cast<long long>(identity.remainder), static_cast<long long>(identity.increment),
        static_cast<long long>(identity.increment), static_cast<long long>(identity.remainder));
  } else if (set_step_->parsed()) {
    Status changed = (*store)->set_step(tag_, step);
    if (!changed.ok()) return report(changed.error());
    std::printf("tag %s: step %lld\n", tag_.c_str(), static_cast<long long>(step));
  } else {
    auto records = (*store)->list_tags(kAllSegmentTags);
    if (!records.ok()) return report(records.error());
    print_tags(*records);
  }
  if (std::fflush(stdout) != 0) {
    return report(kExitFailure, Error{ErrorCode::kUnavailable, "cannot write output"});
  }
  return 0;
}

}  // namespace snowid::cli
