// The checks `snowid check` runs over lists of IDs that clients received,
// and over snowidd's audit logs, without any I/O of its own: the caller feeds
// bytes, in chunks split anywhere, and asks for a report at the end.
//
// Input of IDs, one line each:
//   2124008231138230272             an ID of the input's own source
//   client-7<TAB>2124008231138230272  an ID of the source named client-7
//   # text                          a comment; blank lines are skipped too
// A line may end in "\r\n". A named source is the same source in every
// input; IDs without a name belong to a source named after the input.
//
// Findings:
//   duplicates        an ID seen more than once, anywhere
//   order violations  an ID not greater than the one before it in its source
//   future IDs        an ID whose time unit starts later than now + max_drift
//   missing           (with audit logs) an ID that no audit record covers
//   overlaps          (with audit logs) two audit records covering one ID
// Any finding fails the check (CheckReport::ok()).
//
// Memory: 8 bytes per ID and 16 bytes per audit record; while sorting IDs
// that did not arrive in increasing order (a radix sort), 8 bytes per ID
// more; per source and per node a few dozen bytes.
//
// Not thread-safe: one thread feeds and finishes one IdChecker.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "snowid/decode.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::check {

struct CheckOptions {
  Layout layout;
  // The moment "the future" starts from (Unix ms), and how far ahead of it
  // an ID's time unit may start: the generators' max_drift.
  std::chrono::milliseconds now{0};
  std::chrono::milliseconds max_drift{1000};
  // Examples kept of each kind of finding.
  std::size_t max_examples = 5;
};

// Where an ID was read: input name and line number (from 1).
struct Location {
  std::string input;
  std::uint64_t line = 0;
};

struct OrderViolation {
  std::string source;
  Location where;
  Id previous = 0;
  Id id = 0;
};

struct FutureId {
  Location where;
  Id id = 0;
};

struct Duplicate {
  Id id = 0;
  std::uint64_t occurrences = 0;
};

struct AuditOverlap {
  Id first_a = 0, last_a = 0, first_b = 0, last_b = 0;
};

struct SourceSummary {
  std::string name;
  std::uint64_t ids = 0;
  std::uint64_t order_violations = 0;
};

struct NodeSummary {
  std::uint64_t datacenter = 0;
  std::uint64_t worker = 0;
  std::uint64_t ids = 0;
  std::chrono::milliseconds first{0};  // earliest time unit (Unix ms)
  std::chrono::milliseconds last{0};   // latest time unit (Unix ms)
};

struct AuditSummary {
  std::uint64_t files = 0;
  std::uint64_t records = 0;
  std::uint64_t incarnations = 0;
  std::uint64_t torn_records = 0;  // dropped: never acknowledged (see audit_format.h)
  std::uint64_t overlaps = 0;
  std::vector<AuditOverlap> overlap_examples;
  std::uint64_t missing = 0;  // IDs (occurrences) no record covers
  std::vector<Id> missing_examples;
};

struct CheckReport {
  std::uint64_t ids = 0;
  std::vector<SourceSummary> sources;  // in order of appearance
  std::uint64_t duplicates = 0;        // occurrences beyond the first
  std::uint64_t duplicated_ids = 0;    // distinct IDs seen more than once
  std::vector<Duplicate> duplicate_examples;
  std::uint64_t order_violations = 0;
  std::vector<OrderViolation> order_examples;
  std::uint64_t future = 0;
  std::vector<FutureId> future_examples;
  bool audited = false;  // an audit log was given
  AuditSummary audit;
  std::vector<NodeSummary> nodes;  // by datacenter, then worker

  bool ok() const {
    return duplicates == 0 && order_violations == 0 && future == 0 && audit.missing == 0 &&
           audit.overlaps == 0;
  }
};

class IdChecker {
 public:
  // Requires: validate(options.layout).ok().
  explicit IdChecker(CheckOptions options);

  // A hint: about this many IDs will follow.
  void reserve(std::size_t ids);

  // Starts an input of IDs whose unnamed lines belong to source `name`.
  void begin_ids(std::string name);
  // Starts an audit log. Its layout (header lines) must be options.layout's.
  void begin_audit(std::string name);
  // Bytes of the current input, split anywhere. kInvalidArgument naming the
  // input and line for a line that is not what the input's kind allows.
  Status feed(std::string_view bytes);
  // Ends the current input: a last line without '\n' counts for IDs (and is
  // dropped as torn for audit logs).
  Status end_input();

  // Sorts, finds duplicates and IDs no audit record covers. Call once, after
  // the last end_input().
  CheckReport finish();

 private:
  struct SourceState {
    std::string name;
    Id last = -1;
    std::uint64_t ids = 0;
    std::uint64_t violations = 0;
  };
  struct NodeState {
    std::uint64_t ids = 0;
    std::uint64_t min_units = UINT64_MAX;
    std::uint64_t max_units = 0;
  };
  struct KeyRange {
    std::uint64_t first, last;  // sort keys, inclusive
  };
  enum class Pending { kNone, kRecord, kBadLine };

  Status line(std::string_view text);
  Status id_line(std::string_view text);
  Status audit_line(std::string_view text);
  void add_id(std::size_t source, std::uint64_t id);
  std::size_t named_source(std::string_view name);
  Error bad_line(std::string_view message) const;
  std::uint64_t key_of(std::uint64_t id) const;
  Id id_of_key(std::uint64_t key) const;
  void check_duplicates(CheckReport& report) const;
  void check_audit(CheckReport& report);

  CheckOptions options_;
  std::string layout_text_;
  // Fields, from the layout.
  int total_bits_ = 0;
  int timestamp_shift_ = 0;
  int node_shift_ = 0;
  int node_bits_ = 0;
  int worker_bits_ = 0;
  std::uint64_t node_mask_ = 0;
  // Time units beyond this one are in the future (-1: all are).
  std::int64_t last_allowed_units_ = 0;

  // The current input.
  bool audit_input_ = false;
  std::string input_;
  std::uint64_t line_ = 0;
  std::string partial_;  // an incomplete last line carried to the next feed()
  std::size_t input_source_ = 0;
  std::string cached_name_;
  std::size_t cached_source_ = 0;
  bool cached_valid_ = false;
  Pending pending_ = Pending::kNone;
  std::string pending_error_;

  std::vector<std::uint64_t> keys_;  // one per ID read; see key_of()
  std::vector<SourceState> sources_;
  std::unordered_map<std::string, std::size_t> source_index_;
  std::unordered_map<std::uint64_t, NodeState> nodes_;
  std::uint64_t cached_node_ = UINT64_MAX;
  NodeState* cached_node_state_ = nullptr;
  std::uint64_t order_violations_ = 0;
  std::vector<OrderViolation> order_examples_;
  std::uint64_t future_ = 0;
  std::vector<FutureId> future_examples_;

  bool audited_ = false;
  std::vector<KeyRange> records_;
  std::unordered_set<std::uint64_t> incarnations_;
  std::uint64_t audit_files_ = 0;
  std::uint64_t torn_records_ = 0;
};

// Sorts 64-bit keys in increasing order: an LSD radix sort over the span of
// bits in which keys differ, in passes of up to 12 bits, with one scratch
// buffer of the same size. Exposed for tests.
void sort_keys(std::vector<std::uint64_t>& keys);

}  // namespace snowid::check
