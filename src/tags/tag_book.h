// The tags of segment mode as an operator manages them through the service,
// and the business IDs of tags that carry a template (CosId's string IDs:
// "ORD-20261202-000042"): one TagBook per node, on its own connection to the
// node's segment store.
//
// Where things live, so that every node sees them without a restart:
// - A tag's numbers: its row of snowid_segments, as for any segment tag.
// - Its settings (template, zone, step of business periods, retired): the
//   own row '#tag:<tag>' (SegmentStore's own rows), whose max_id is a version
//   every change raises by one in a compare-and-set. Every node reads the
//   settings rows once per `refresh` and before it serves a tag it has not
//   read yet, so a change reaches every node within a refresh.
// - A business tag's numbers per period: the own row '#<label>:<tag>'
//   ("#20261202:orders"), created at 1 by the first node that needs it. The
//   period is part of the row's key, so numbers restart at 1 in each
//   period and two nodes in the same period take disjoint ranges of one row.
//   A template without a date uses the tag's own row.
//
// No-repeat invariant of business IDs: a string renders (period label,
// number) injectively (business_format.h refuses templates that would not),
// each number of a period's row is handed out once (take_own_range is the
// store's atomic take), and a node renders a number only with the date of
// the period it was taken for: at a period change it drops what it holds of
// the old one. A template change is allowed only if no string of the new
// template can equal one of the old (check_business_template_change), since
// nodes serve the old one until their next refresh. A node whose clock
// disagrees with the store's about the period refuses rather than guesses.
// A period whose numbers outgrow the template's width is refused, never a
// longer string, with a warning logged once a period's numbers pass
// `width_warning_fraction` of the width.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/clock.h"
#include "snowid/error.h"
#include "snowid/ext/segment_store.h"

namespace snowid::tags {

// A tag's settings, as its '#tag:' row keeps them.
struct TagSettings {
  std::string template_text;  // empty: the tag serves plain numbers
  std::string zone = "UTC";   // the template's time zone
  std::int64_t step = 1000;   // the range a node takes of a business period
  bool retired = false;
  std::int64_t version = 0;  // the settings row's max_id; 0: no row
};

// The longest tag that can be administered or carry a template: its period
// rows ('#' + an 8-digit label + ':' + the tag) must fit the tag column.
inline constexpr std::size_t kMaxAdministeredTagCharacters = 118;

// A tag as `snowid tag show` prints it.
struct TagView {
  std::string tag;
  std::int64_t max_id = 0;  // the tag's own row: the first number not taken
  std::int64_t step = 0;
  std::string description;
  std::string updated_at;
  TagSettings settings;
};

struct TagCreation {
  std::string tag;
  std::int64_t start = 1;
  std::int64_t step = 1000;
  std::string description;
  std::string template_text;  // empty: plain numbers
  std::string zone = "UTC";
};

// What a change sets; what is absent stays.
struct TagChange {
  std::optional<std::int64_t> step;
  std::optional<std::string> template_text;
  std::optional<std::string> zone;
};

// A business tag's counters, for /metrics.
struct BusinessTagStats {
  std::string tag;
  std::string period;              // the label of the period served last
  std::uint64_t issued = 0;        // strings handed out
  std::uint64_t refused_width = 0; // requests refused: the period's numbers outgrew the width
  std::uint64_t refused_clock = 0; // requests refused: node and store disagree about the period
  double width_used = 0;           // the highest number taken in the period / the width's largest
  bool width_warning = false;      // the period passed width_warning_fraction
};

struct TagBookOptions {
  std::chrono::milliseconds refresh{1000};
  double width_warning_fraction = 0.8;
  // Null: SystemClock. Reads the date of business IDs.
  Clock* clock = nullptr;
  // Receives one line per change made through this node (audit).
  std::function<void(std::string_view line)> audit;
  // A store put back from an older backup: the file (in the node's state
  // directory) that keeps the highest end of every range of a business
  // period the store handed this node (src/segment/range_memory.h), under
  // `store_name` (segment_store_name). A range that starts below it is
  // refused, never rendered. Empty: nothing is remembered.
  std::filesystem::path range_memory;
  std::string store_name;
};

class TagBook {
 public:
  // `store` must be a store of record (a single SQLite, PostgreSQL or
  // MariaDB/MySQL store of snowid's layout); others fail here
  // (kInvalidArgument), and so does a damaged range memory (kStateFile).
  static Result<std::unique_ptr<TagBook>> open(std::unique_ptr<SegmentStore> store,
                                               TagBookOptions options = {});
  virtual ~TagBook() = default;

  // Whether plain numbers of `tag` may be served: kFailedPrecondition if the
  // tag is retired or carries a template (as this node last read it).
  virtual Status check_plain(std::string_view tag) = 0;

  // `count` business IDs of `tag`, appended to `out`. kNotFound: no such
  // tag; kFailedPrecondition: retired, no template, or the period's numbers
  // outgrew the width; kUnavailable: the store cannot be reached, or the
  // node's clock and the store's disagree about the period.
  virtual Status next(std::string_view tag, std::size_t count, std::vector<std::string>& out) = 0;

  // Administration: store calls, each checked; `actor` names who asks (a
  // token's name) in the audit line.
  virtual Result<TagView> create(const TagCreation& creation, std::string_view actor) = 0;
  virtual Result<std::vector<TagView>> list(std::size_t max_tags) = 0;
  virtual Result<TagView> show(std::string_view tag) = 0;
  virtual Result<TagView> change(std::string_view tag, const TagChange& change,
                                 std::string_view actor) = 0;
  virtual Result<TagView> retire(std::string_view tag, std::string_view actor) = 0;

  // Reads every tag's settings again (the background thread does, each refresh).
  virtual Status refresh() = 0;
  virtual std::vector<BusinessTagStats> stats() const = 0;
};

// The settings row's description ("snowid-tag/1 ..."), and back:
// kInvalidArgument for text this version does not read.
std::string encode_tag_settings(const TagSettings& settings);
Result<TagSettings> decode_tag_settings(std::string_view text, std::int64_t version);

}  // namespace snowid::tags
