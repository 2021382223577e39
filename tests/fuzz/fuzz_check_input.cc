// Fuzz target: what `snowid check` reads from outside (src/check): lists of
// IDs (bare, or NAME<TAB>ID, with comments and CRLF), snowidd audit logs
// (header lines, records, torn-record markers), and the options --now,
// --max-drift and --preset.
//
// Input: byte 0 picks the kind (even: IDs, odd: an audit log, then a list
// of IDs checked against it) and, with byte 1, where the rest is split into
// two feed() calls. If the rest starts with a comment line
// "# options now=<time> drift=<ms> preset=<name>" (any of them), the
// options are read as the CLI reads them: the time with parse_time (Unix ms
// or ISO 8601), the drift up to 366 days; else now is 2026-11-18, the drift
// 1 s and the layout twitter's. The line stays in the input (a comment).
//
// Checks beyond "no crash, no sanitizer report": the bytes fed whole, in two
// chunks and in chunks of 1 + (size % 61) bytes give the same error or the
// same report, since feed() promises that a split anywhere does not matter;
// a report's counts agree with its sources and examples; an audit record
// line that parses prints back (append_record) to one that parses alike.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "audit_format.h"
#include "fuzz_support.h"
#include "id_checker.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace {

using std::chrono::milliseconds;

struct Outcome {
  std::string error;  // "" if every feed() and end_input() succeeded
  std::uint64_t ids = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t order_violations = 0;
  std::uint64_t future = 0;
  std::uint64_t records = 0;
  std::uint64_t torn_records = 0;
  std::uint64_t overlaps = 0;
  std::uint64_t missing = 0;
  std::vector<snowid::Id> examples;  // of duplicates, order violations, future IDs
  bool ok = false;

  bool operator==(const Outcome&) const = default;
};

// The options of a leading "# options ..." line, as the CLI would read them;
// false if one is malformed (the CLI would refuse it).
bool read_options(std::string_view body, snowid::check::CheckOptions& options) {
  options.layout = *snowid::preset("twitter");
  options.now = milliseconds{1795000000000};
  constexpr std::string_view kPrefix = "# options ";
  if (body.substr(0, kPrefix.size()) != kPrefix) return true;
  std::string_view rest = body.substr(kPrefix.size(), body.find('\n') - kPrefix.size());
  while (!rest.empty()) {
    const std::string_view word = rest.substr(0, rest.find(' '));
    rest.remove_prefix(std::min(word.size() + 1, rest.size()));
    const auto eq = word.find('=');
    const std::string_view name = word.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : word.substr(eq + 1);
    if (name == "now") {
      auto now = snowid::parse_time(value);
      if (!now.ok()) return false;
      options.now = *now;
    } else if (name == "drift") {
      auto drift = snowid::parse_unsigned(value, 366ULL * 24 * 3'600'000, "drift");
      if (!drift.ok()) return false;
      options.max_drift = milliseconds{static_cast<long long>(*drift)};
    } else if (name == "preset") {
      auto layout = snowid::preset(value);
      if (!layout.ok()) return false;
      options.layout = *layout;
    } else {
      return false;
    }
  }
  return true;
}

// Feeds `body` as one input of the chosen kind, split at each of `cuts`; an
// audit log is followed by the same bytes as a list of IDs.
Outcome run(const snowid::check::CheckOptions& options, std::string_view body, bool audit,
            const std::vector<std::size_t>& cuts) {
  snowid::check::IdChecker checker(options);
  Outcome outcome;
  const auto feed_input = [&](bool as_audit) -> bool {
    if (as_audit) {
      checker.begin_audit("audit");
    } else {
      checker.begin_ids("ids");
    }
    std::size_t from = 0;
    for (std::size_t cut : cuts) {
      snowid::Status fed = checker.feed(body.substr(from, cut - from));
      from = cut;
      if (!fed.ok()) {
        outcome.error = fed.error().message;
        return false;
      }
    }
    snowid::Status ended = checker.end_input();
    if (!ended.ok()) outcome.error = ended.error().message;
    return ended.ok();
  };
  if (audit && !feed_input(true)) return outcome;
  if (!feed_input(false)) return outcome;
  const snowid::check::CheckReport report = checker.finish();
  std::uint64_t source_ids = 0;
  for (const auto& source : report.sources) source_ids += source.ids;
  SNOWID_FUZZ_CHECK(source_ids == report.ids);
  SNOWID_FUZZ_CHECK(report.duplicated_ids <= report.duplicates);
  SNOWID_FUZZ_CHECK(report.duplicate_examples.size() <= report.duplicated_ids);
  SNOWID_FUZZ_CHECK(report.order_examples.size() <= report.order_violations);
  SNOWID_FUZZ_CHECK(report.future_examples.size() <= report.future);
  outcome.ids = report.ids;
  outcome.duplicates = report.duplicates;
  outcome.order_violations = report.order_violations;
  outcome.future = report.future;
  outcome.records = report.audit.records;
  outcome.torn_records = report.audit.torn_records;
  outcome.overlaps = report.audit.overlaps;
  outcome.missing = report.audit.missing;
  for (const auto& d : report.duplicate_examples) outcome.examples.push_back(d.id);
  for (const auto& o : report.order_examples) outcome.examples.push_back(o.id);
  for (const auto& f : report.future_examples) outcome.examples.push_back(f.id);
  outcome.ok = report.ok();
  return outcome;
}

void check_record_round_trip(std::string_view body) {
  while (!body.empty()) {
    const auto newline = body.find('\n');
    const std::string_view line = body.substr(0, newline);
    body = newline == std::string_view::npos ? std::string_view{} : body.substr(newline + 1);
    auto record = snowid::audit::parse_record(line);
    if (!record.ok()) continue;
    std::string printed;
    snowid::audit::append_record(printed, *record);
    SNOWID_FUZZ_CHECK(!printed.empty() && printed.back() == '\n');
    printed.pop_back();
    auto again = snowid::audit::parse_record(printed);
    SNOWID_FUZZ_CHECK(again.ok() && again->incarnation == record->incarnation &&
                      again->datacenter == record->datacenter && again->worker == record->worker &&
                      again->first == record->first && again->last == record->last);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool audit = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  snowid::check::CheckOptions options;
  if (!read_options(body, options)) return 0;
  const std::size_t split = body.empty() ? 0 : (std::size_t{data[0]} << 8 | data[1]) % body.size();
  std::vector<std::size_t> small_chunks;
  for (std::size_t at = 1 + size % 61; at < body.size(); at += 1 + size % 61) {
    small_chunks.push_back(at);
  }
  small_chunks.push_back(body.size());
  const Outcome whole = run(options, body, audit, {body.size()});
  const Outcome in_two = run(options, body, audit, {split, body.size()});
  const Outcome in_many = run(options, body, audit, small_chunks);
  SNOWID_FUZZ_CHECK(whole == in_two);
  SNOWID_FUZZ_CHECK(whole == in_many);
  if (audit) check_record_round_trip(body);
  return 0;
}
