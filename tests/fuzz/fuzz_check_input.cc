// Fuzz target: what `snowid check` reads from outside (src/check): lists of
// IDs (bare, or NAME<TAB>ID, with comments and CRLF) and snowidd audit logs
// (header lines, records, torn-record markers).
//
// Input: byte 0 picks the kind (even: IDs, odd: an audit log, then a list
// of IDs checked against it) and, with byte 1, where the rest is split into
// two feed() calls. Checks beyond "no crash, no sanitizer report": the same
// bytes fed whole and fed in two chunks give the same verdict, the same
// error and the same counts, since feed() promises that a split anywhere
// does not matter.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "id_checker.h"

namespace {

struct Outcome {
  std::string error;  // "" if every feed() and end_input() succeeded
  std::uint64_t ids = 0;
  std::uint64_t duplicates = 0;
  std::uint64_t order_violations = 0;
  std::uint64_t records = 0;
  std::uint64_t missing = 0;
  bool ok = false;

  bool operator==(const Outcome&) const = default;
};

snowid::check::CheckOptions options() {
  snowid::check::CheckOptions o;
  o.layout = *snowid::preset("twitter");
  o.now = std::chrono::milliseconds{1795000000000};
  return o;
}

// Feeds `body` as one input of the chosen kind, in the chunks [0, split) and
// [split, end); an audit log is followed by the same bytes as a list of IDs.
Outcome run(std::string_view body, bool audit, std::size_t split) {
  snowid::check::IdChecker checker(options());
  Outcome outcome;
  const auto feed_input = [&](bool as_audit) -> bool {
    if (as_audit) {
      checker.begin_audit("audit");
    } else {
      checker.begin_ids("ids");
    }
    for (std::string_view chunk : {body.substr(0, split), body.substr(split)}) {
      snowid::Status fed = checker.feed(chunk);
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
  outcome.ids = report.ids;
  outcome.duplicates = report.duplicates;
  outcome.order_violations = report.order_violations;
  outcome.records = report.audit.records;
  outcome.missing = report.audit.missing;
  outcome.ok = report.ok();
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool audit = (data[0] & 1) != 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::size_t split = body.empty() ? 0 : (std::size_t{data[0]} << 8 | data[1]) % body.size();
  const Outcome whole = run(body, audit, body.size());
  const Outcome in_two = run(body, audit, split);
  SNOWID_FUZZ_CHECK(whole == in_two);
  return 0;
}
