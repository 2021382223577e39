// The hot path is IdChecker::feed() on lines that are a bare ID: one pass
// over the digits up to the '\n', and add_id(), which keeps per-source,
// per-node and future checks on state that stays in cache and appends the
// ID's sort key. Everything that needs all IDs at once (duplicates, audit
// coverage) runs in finish() on the sorted keys, in linear passes.
#include "id_checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>

#include "audit_format.h"

namespace snowid::check {
namespace {

// The lowest `bits` bits set.
std::uint64_t low_mask(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

constexpr std::size_t kMaxLineBytes = 1 << 16;
constexpr std::size_t kMaxDigits = 19;  // 2^63-1 has 19
constexpr auto kMaxId = static_cast<std::uint64_t>(std::numeric_limits<Id>::max());

// If the 8 bytes at p are all decimal digits, their value: the digits are
// combined in pairs, then fours, then eights, by three multiplications
// (simdjson's parse_eight_digits_unrolled).
inline bool eight_digits(const char* p, std::uint64_t& value) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);  // little-endian: the first digit in the low byte
  constexpr std::uint64_t kHighNibbles = 0xF0F0F0F0F0F0F0F0;
  // Each byte 0x30..0x39: high nibble 3, and adding 6 keeps it 3.
  if ((v & kHighNibbles) != 0x3030303030303030 ||
      ((v + 0x0606060606060606) & kHighNibbles) != 0x3030303030303030) {
    return false;
  }
  v = ((v & 0x0F0F0F0F0F0F0F0F) * 2561) >> 8;
  v = ((v & 0x00FF00FF00FF00FF) * 6553601) >> 16;
  value = ((v & 0x0000FFFF0000FFFF) * 42949672960001) >> 32;
  return true;
}

// Reads the decimal digits from p on into `value` (wrapping past 20 of
// them); returns where they end.
inline const char* scan_digits(const char* p, const char* end, std::uint64_t& value) {
  std::uint64_t v = 0;
  std::uint64_t eight = 0;
  while (end - p >= 8 && eight_digits(p, eight)) {
    v = v * 100'000'000 + eight;
    p += 8;
  }
  unsigned digit = 0;
  while (p < end && (digit = static_cast<unsigned>(*p - '0')) <= 9) {
    v = v * 10 + digit;
    ++p;
  }
  value = v;
  return p;
}

// True if [p, digits_end) is an ID: 1 to 19 digits, below 2^63.
inline bool is_id(const char* p, const char* digits_end, std::uint64_t value) {
  const auto length = static_cast<std::size_t>(digits_end - p);
  return length > 0 && length <= kMaxDigits && value <= kMaxId;
}

}  // namespace

void sort_keys(std::vector<std::uint64_t>& keys) {
  if (std::is_sorted(keys.begin(), keys.end())) return;
  const std::size_t n = keys.size();
  if (n < 4096) {
    std::sort(keys.begin(), keys.end());
    return;
  }
  // Only the bits in which keys differ decide the order: IDs of one run
  // share their high timestamp bits and usually their node. Sort on that
  // span in passes of at most 12 bits, so that the counts stay in cache.
  std::uint64_t varying = 0;
  for (std::uint64_t key : keys) varying |= key ^ keys[0];
  const int low = std::countr_zero(varying);
  const int span = 64 - std::countl_zero(varying) - low;
  constexpr int kMaxDigitBits = 12;
  const int passes = (span + kMaxDigitBits - 1) / kMaxDigitBits;
  const int digit_bits = (span + passes - 1) / passes;
  const std::uint64_t mask = (std::uint64_t{1} << digit_bits) - 1;
  const std::size_t buckets = std::size_t{1} << digit_bits;

  std::vector<std::size_t> counts(static_cast<std::size_t>(passes) * buckets);
  for (std::uint64_t key : keys) {
    for (int pass = 0; pass < passes; ++pass) {
      ++counts[static_cast<std::size_t>(pass) * buckets +
               ((key >> (low + pass * digit_bits)) & mask)];
    }
  }
  auto scratch = std::make_unique_for_overwrite<std::uint64_t[]>(n);
  std::uint64_t* from = keys.data();
  std::uint64_t* to = scratch.get();
  for (int pass = 0; pass < passes; ++pass) {
    std::size_t* count = counts.data() + static_cast<std::size_t>(pass) * buckets;
    std::size_t offset = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::size_t here = count[b];
      count[b] = offset;
      offset += here;
    }
    const int shift = low + pass * digit_bits;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t key = from[i];
      to[count[(key >> shift) & mask]++] = key;
    }
    std::swap(from, to);
  }
  if (from != keys.data()) std::memcpy(keys.data(), from, n * sizeof(std::uint64_t));
}

IdChecker::IdChecker(CheckOptions options) : options_(std::move(options)) {
  const Layout& layout = options_.layout;
  const FieldShifts shifts = field_shifts(layout);
  layout_text_ = describe(layout);
  total_bits_ = shifts.timestamp + layout.timestamp_bits;
  timestamp_shift_ = shifts.timestamp;
  node_shift_ = shifts.worker;  // the datacenter sits right above the worker
  worker_bits_ = layout.worker_bits;
  node_bits_ = layout.datacenter_bits + layout.worker_bits;
  node_mask_ = low_mask(node_bits_);
  // now + max_drift - epoch, saturated: --now may be any time parse_time
  // reads, up to 2^63-1 ms.
  std::int64_t reach = 0;
  std::int64_t horizon = 0;
  if (__builtin_add_overflow(options_.now.count(), options_.max_drift.count(), &reach)) {
    horizon = reach < 0 ? INT64_MAX : INT64_MIN;  // the sum wrapped around
  } else if (__builtin_sub_overflow(reach, layout.epoch.count(), &horizon)) {
    horizon = INT64_MIN;  // the epoch is not negative
  }
  last_allowed_units_ = horizon < 0 ? -1 : horizon / layout.time_unit.count();
}

void IdChecker::reserve(std::size_t ids) { keys_.reserve(keys_.size() + ids); }

// Sort keys: the ID itself while the sequence sits below the node fields.
// With the sequence above them (Sonyflake), one node's block of IDs is not a
// numeric interval, so the node fields move to the top: then each audit
// record is one interval of keys and each node's IDs keep their order.
std::uint64_t IdChecker::key_of(std::uint64_t id) const {
  if (options_.layout.sequence_position == SequencePosition::kLow || node_bits_ == 0) return id;
  return (id >> node_bits_) | ((id & node_mask_) << (total_bits_ - node_bits_));
}

Id IdChecker::id_of_key(std::uint64_t key) const {
  if (options_.layout.sequence_position == SequencePosition::kLow || node_bits_ == 0) {
    return static_cast<Id>(key);
  }
  const int rest_bits = total_bits_ - node_bits_;
  const std::uint64_t rest = key & low_mask(rest_bits);
  return static_cast<Id>((rest << node_bits_) | (key >> rest_bits));
}

void IdChecker::begin_ids(std::string name) {
  audit_input_ = false;
  input_ = std::move(name);
  line_ = 0;
  partial_.clear();
  input_source_ = named_source(input_);
}

void IdChecker::begin_audit(std::string name) {
  audit_input_ = true;
  audited_ = true;
  ++audit_files_;
  input_ = std::move(name);
  line_ = 0;
  partial_.clear();
  pending_ = Pending::kNone;
}

Error IdChecker::bad_line(std::string_view message) const {
  return invalid_argument(fmt::format("{}:{}: {}", input_, line_, message));
}

std::size_t IdChecker::named_source(std::string_view name) {
  if (cached_valid_ && name == cached_name_) return cached_source_;
  auto [it, added] = source_index_.try_emplace(std::string(name), sources_.size());
  if (added) sources_.push_back(SourceState{std::string(name)});
  cached_name_.assign(name);
  cached_source_ = it->second;
  cached_valid_ = true;
  return it->second;
}

Status IdChecker::feed(std::string_view bytes) {
  if (!partial_.empty()) {
    const auto newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      if (partial_.size() + bytes.size() > kMaxLineBytes) {
        ++line_;
        return bad_line("line longer than 64 KiB");
      }
      partial_.append(bytes);
      return {};
    }
    partial_.append(bytes.substr(0, newline));
    ++line_;
    Status s = line(partial_);
    partial_.clear();
    if (!s.ok()) return s;
    bytes.remove_prefix(newline + 1);
  }
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    // The common line, a bare ID, in one pass over its bytes.
    if (!audit_input_) {
      std::uint64_t id = 0;
      const char* q = scan_digits(p, end, id);
      if (q < end && *q == '\n' && is_id(p, q, id) && (id >> total_bits_) == 0) {
        ++line_;
        add_id(input_source_, id);
        p = q + 1;
        continue;
      }
    }
    const auto* newline =
        static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (newline == nullptr) {
      if (static_cast<std::size_t>(end - p) > kMaxLineBytes) {
        ++line_;
        return bad_line("line longer than 64 KiB");
      }
      partial_.assign(p, end);
      break;
    }
    ++line_;
    Status s = line(std::string_view(p, static_cast<std::size_t>(newline - p)));
    if (!s.ok()) return s;
    p = newline + 1;
  }
  return {};
}

Status IdChecker::end_input() {
  Status result;
  if (!partial_.empty()) {
    ++line_;
    if (audit_input_) {
      // Every record is written with its '\n' in one write(2): a last line
      // without one was cut short and never acknowledged.
      if (partial_[0] != '#') ++torn_records_;
    } else {
      result = line(partial_);
    }
    partial_.clear();
  }
  if (result.ok() && audit_input_ && pending_ == Pending::kBadLine) {
    result = invalid_argument(pending_error_);
  }
  pending_ = Pending::kNone;
  return result;
}

Status IdChecker::line(std::string_view text) {
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return audit_input_ ? audit_line(text) : id_line(text);
}

Status IdChecker::id_line(std::string_view text) {
  if (text.empty() || text[0] == '#') return {};
  std::size_t source = input_source_;
  std::string_view digits = text;
  if (const auto tab = text.find('\t'); tab != std::string_view::npos) {
    const std::string_view name = text.substr(0, tab);
    if (name.empty()) return bad_line("empty source name before the tab");
    digits = text.substr(tab + 1);
    source = named_source(name);
  }
  std::uint64_t id = 0;
  const char* digits_end = scan_digits(digits.data(), digits.data() + digits.size(), id);
  if (digits_end != digits.data() + digits.size() || !is_id(digits.data(), digits_end, id)) {
    auto parsed = parse_id(digits);
    return bad_line(fmt::format("'{}' is not an ID or SOURCE<TAB>ID{}", audit::excerpt(text),
                                parsed.ok() ? "" : ": " + parsed.error().message));
  }
  if ((id >> total_bits_) != 0) {
    return bad_line(fmt::format("ID {} has bits above the layout's {} ({}): wrong --preset?", id,
                                total_bits_, layout_text_));
  }
  add_id(source, id);
  return {};
}

void IdChecker::add_id(std::size_t source, std::uint64_t id) {
  const auto signed_id = static_cast<Id>(id);
  SourceState& state = sources_[source];
  if (signed_id <= state.last) {
    ++state.violations;
    if (order_examples_.size() < options_.max_examples) {
      order_examples_.push_back(
          OrderViolation{state.name, Location{input_, line_}, state.last, signed_id});
    }
    ++order_violations_;
  }
  state.last = signed_id;
  ++state.ids;

  const std::uint64_t units = id >> timestamp_shift_;
  if (static_cast<std::int64_t>(units) > last_allowed_units_) {
    if (future_examples_.size() < options_.max_examples) {
      future_examples_.push_back(FutureId{Location{input_, line_}, signed_id});
    }
    ++future_;
  }
  const std::uint64_t node = (id >> node_shift_) & node_mask_;
  if (node != cached_node_) {
    cached_node_state_ = &nodes_[node];  // unordered_map: references survive rehashing
    cached_node_ = node;
  }
  NodeState& stats = *cached_node_state_;
  ++stats.ids;
  stats.min_units = std::min(stats.min_units, units);
  stats.max_units = std::max(stats.max_units, units);
  keys_.push_back(key_of(id));
}

// See audit_format.h for the format and for why a line right above a torn
// marker, or an unterminated last line, is dropped.
Status IdChecker::audit_line(std::string_view text) {
  if (text.empty()) return {};
  if (text[0] == '#') {
    if (text.substr(0, audit::kTornMarker.size()) == audit::kTornMarker) {
      if (pending_ == Pending::kRecord) records_.pop_back();
      if (pending_ != Pending::kNone) ++torn_records_;
      pending_ = Pending::kNone;
    } else if (auto layout = audit::header_layout(text); layout && *layout != layout_text_) {
      return bad_line(
          fmt::format("the audit log was written with layout {}, but the check uses {}: give the "
                      "server's layout options (--preset, --timestamp-bits, ...)",
                      audit::excerpt(*layout), layout_text_));
    }
    return {};
  }
  if (pending_ == Pending::kBadLine) return invalid_argument(pending_error_);
  auto record = audit::parse_record(text);
  if (record.ok()) {
    const auto node_of = [this](Id id) {
      return (static_cast<std::uint64_t>(id) >> node_shift_) & node_mask_;
    };
    const std::uint64_t node = record->datacenter << worker_bits_ | record->worker;
    const bool fits = (static_cast<std::uint64_t>(record->last) >> total_bits_) == 0 &&
                      record->datacenter <= (node_mask_ >> worker_bits_) &&
                      record->worker <= low_mask(worker_bits_);
    if (!fits || node_of(record->first) != node || node_of(record->last) != node) {
      record = invalid_argument(fmt::format(
          "audit record '{}' does not decode to node {}/{} under layout {}: wrong --preset?",
          audit::excerpt(text), record->datacenter, record->worker, layout_text_));
    }
  }
  if (!record.ok()) {
    // Kept back: a torn marker on a later line may cancel it.
    pending_ = Pending::kBadLine;
    pending_error_ = bad_line(record.error().message).message;
    return {};
  }
  records_.push_back(KeyRange{key_of(static_cast<std::uint64_t>(record->first)),
                              key_of(static_cast<std::uint64_t>(record->last))});
  incarnations_.insert(record->incarnation);
  pending_ = Pending::kRecord;
  return {};
}

CheckReport IdChecker::finish() {
  CheckReport report;
  report.ids = keys_.size();
  report.sources.reserve(sources_.size());
  for (const SourceState& s : sources_) {
    if (s.ids > 0) report.sources.push_back(SourceSummary{s.name, s.ids, s.violations});
  }
  report.order_violations = order_violations_;
  report.order_examples = std::move(order_examples_);
  report.future = future_;
  report.future_examples = std::move(future_examples_);
  const Layout& layout = options_.layout;
  for (const auto& [node, stats] : nodes_) {
    auto time_of = [&layout](std::uint64_t units) {
      return layout.epoch + layout.time_unit * static_cast<std::int64_t>(units);
    };
    report.nodes.push_back(NodeSummary{node >> worker_bits_, node & low_mask(worker_bits_),
                                       stats.ids, time_of(stats.min_units),
                                       time_of(stats.max_units)});
  }
  std::sort(report.nodes.begin(), report.nodes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.datacenter, a.worker) < std::tie(b.datacenter, b.worker);
  });

  sort_keys(keys_);
  check_duplicates(report);
  if (audited_) check_audit(report);
  return report;
}

void IdChecker::check_duplicates(CheckReport& report) const {
  const std::size_t n = keys_.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && keys_[j] == keys_[i]) ++j;
    if (j - i > 1) {
      report.duplicates += j - i - 1;
      ++report.duplicated_ids;
      if (report.duplicate_examples.size() < options_.max_examples) {
        report.duplicate_examples.push_back(Duplicate{id_of_key(keys_[i]), j - i});
      }
    }
    i = j;
  }
}

void IdChecker::check_audit(CheckReport& report) {
  AuditSummary& audit = report.audit;
  report.audited = true;
  audit.files = audit_files_;
  audit.records = records_.size();
  audit.incarnations = incarnations_.size();
  audit.torn_records = torn_records_;

  // Overlapping records mean an ID was issued twice; then merge them into
  // disjoint intervals of keys for one sweep along the sorted keys.
  std::sort(records_.begin(), records_.end(),
            [](const KeyRange& a, const KeyRange& b) { return a.first < b.first; });
  std::size_t merged = 0;
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const KeyRange& record = records_[i];
    if (merged > 0 && record.first <= records_[merged - 1].last) {
      KeyRange& into = records_[merged - 1];
      ++audit.overlaps;
      if (audit.overlap_examples.size() < options_.max_examples) {
        audit.overlap_examples.push_back(AuditOverlap{id_of_key(into.first), id_of_key(into.last),
                                                      id_of_key(record.first),
                                                      id_of_key(record.last)});
      }
      into.last = std::max(into.last, record.last);
      continue;
    }
    records_[merged++] = record;
  }
  records_.resize(merged);

  std::size_t r = 0;
  for (std::uint64_t key : keys_) {
    while (r < merged && records_[r].last < key) ++r;
    if (r == merged || key < records_[r].first) {
      ++audit.missing;
      const Id id = id_of_key(key);
      if (audit.missing_examples.size() < options_.max_examples &&
          (audit.missing_examples.empty() || audit.missing_examples.back() != id)) {
        audit.missing_examples.push_back(id);
      }
    }
  }
}

}  // namespace snowid::check
