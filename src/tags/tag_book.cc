// TagBook (tag_book.h): the settings cache, the administration calls and the
// business IDs of one node.
#include "tag_book.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>

#include "snowid/ext/business_format.h"
#include "snowid/ext/segment.h"
#include "range_memory.h"
#include "snowid/segment_tag.h"

namespace snowid::tags {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kSettingsPrefix = "#tag:";
// Every template a tag has carried: the rows '#t:<tag>:<n>', n from 1, each
// holding one template in its description, never removed (not by a
// retirement either). A new template is checked against all of them, since
// strings of any of them may have been handed out.
constexpr std::string_view kHistoryPrefix = "#t:";
constexpr std::int64_t kMaxTemplatesPerTag = 999'999;
constexpr std::string_view kSettingsMagic = "snowid-tag/1";
// Settings rows the cache reads at most: the store's tag count bounds them.
constexpr std::size_t kMaxSettingsRows = 100'000;
// A tag asked for and found without settings is not asked the store again
// for this long (a client naming random tags costs one read per tag per
// second at most).
constexpr milliseconds kAbsentFor{1000};
constexpr std::size_t kMaxAbsentRemembered = 10'000;
// How long after a store call failed business requests are refused without
// calling it (check_store_answers).
constexpr std::chrono::milliseconds kStoreQuietFor{1000};
// How far above its handed-out numbers a retired tag may be created again
// (the store is raised a range of at most kMaxSegmentStep at a time).
constexpr std::int64_t kMaxStartRaise = 1'000'000'000'000;
// The highest start: room for at least one range of the largest step.
constexpr std::int64_t kMaxStart = INT64_MAX - kMaxSegmentStep;

std::string settings_key(std::string_view tag) { return fmt::format("{}{}", kSettingsPrefix, tag); }

std::string history_prefix(std::string_view tag) {
  return fmt::format("{}{}:", kHistoryPrefix, tag);
}

std::string period_key(std::string_view label, std::string_view tag) {
  return fmt::format("#{}:{}", label, tag);
}

Error failed(std::string message) {
  return Error{ErrorCode::kFailedPrecondition, std::move(message)};
}

Status check_tag(std::string_view tag) {
  if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
  std::size_t characters = 0;
  for (const char c : tag) characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (characters > kMaxAdministeredTagCharacters) {
    return invalid_argument(fmt::format(
        "tag '{}' is {} characters long; a tag administered through the service or carrying a "
        "template has at most {}",
        tag.substr(0, 32), characters, kMaxAdministeredTagCharacters));
  }
  return {};
}

Status check_step(std::int64_t step) {
  if (step < kMinSegmentStep || step > kMaxSegmentStep) {
    return invalid_argument(fmt::format("step must be between {} and {}, got {}", kMinSegmentStep,
                                        kMaxSegmentStep, step));
  }
  return {};
}

// What to tell a client asking for numbers of a retired tag.
Error retired_error(std::string_view tag) {
  return failed(fmt::format(
      "tag '{}' is retired: it hands out no numbers (an administrator may create it again; its "
      "numbers continue above those handed out)",
      tag));
}

// `text` as a JSON string, quotes included (for the audit lines).
std::string json_text(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A tag's settings as the cache holds them, with the template parsed once.
struct Entry {
  TagSettings settings;
  std::optional<BusinessFormat> format;  // nullopt: no template, or one this node cannot read
  std::string format_error;              // why a template was not read
};

Entry make_entry(TagSettings settings) {
  Entry entry;
  entry.settings = std::move(settings);
  if (!entry.settings.template_text.empty()) {
    auto format = BusinessFormat::parse(entry.settings.template_text, entry.settings.zone);
    if (format.ok()) {
      entry.format.emplace(std::move(*format));
    } else {
      entry.format_error = format.error().message;
    }
  }
  return entry;
}

// One business tag's numbers on this node: the range of the period served
// last. Guarded by its mutex.
struct BusinessState {
  std::mutex mutex;
  std::string label;       // the period the range belongs to
  bool filled = false;     // a range of `label` was taken
  std::int64_t next = 0;   // the number handed out next
  std::int64_t end = 0;    // exclusive, at most the width's largest + 1
  std::int64_t version = -1;  // the settings version the range was taken under
  std::int64_t first = 0;     // where the current range began (for the prefetch point)
  // The size of the next range: the tag's step, grown as segment mode's
  // does while ranges last less than 15 minutes (next_segment_step), capped
  // by the width (increment_cap).
  std::int64_t increment = 0;
  std::chrono::steady_clock::time_point range_taken{};
  // The next range, taken ahead by the background thread once half of the
  // current one is used: taken for `standby_label` under `standby_version`,
  // and used only if both still hold and it lies above the current range.
  std::optional<SegmentRange> standby;
  std::string standby_label;
  std::int64_t standby_version = -1;
  bool prefetch_pending = false;
  std::condition_variable prefetched;  // prefetch_pending went false
  std::optional<std::string> exhausted;  // a period whose numbers outgrew the width
  std::optional<std::string> warned;     // a period the width warning was logged for
  long long civil_second = -1;  // the second `civil` was read for
  std::int64_t civil_version = -1;  // ... under these settings (their zone)
  CivilTime civil{};
  BusinessTagStats stats;
};

class StoreTagBook final : public TagBook {
 public:
  StoreTagBook(std::unique_ptr<SegmentStore> store, TagBookOptions options,
               std::unique_ptr<segment::RangeMemory> memory)
      : store_(std::move(store)),
        memory_(std::move(memory)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? options_.clock : &SystemClock::instance()) {}

  ~StoreTagBook() override {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_.notify_all();
    if (refresher_.joinable()) refresher_.join();
  }

  void start() {
    refresher_ = std::thread([this] { refresh_loop(); });
  }

  Status check_plain(std::string_view tag) override {
    auto entry = lookup(tag, false);
    if (!entry.ok()) {
      // The store cannot be read: plain numbers go on from the allocator's
      // buffers, as segment mode serves through store outages; the settings
      // as last read stand.
      return {};
    }
    if (!*entry) return {};
    if ((*entry)->settings.retired) return retired_error(tag);
    if (!(*entry)->settings.template_text.empty()) {
      return failed(fmt::format(
          "tag '{}' carries the template '{}': ask for its business IDs (/v1/business/{})", tag,
          (*entry)->settings.template_text, tag));
    }
    return {};
  }

  Status next(std::string_view tag, std::size_t count, std::vector<std::string>& out) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
    auto looked = lookup(tag, true);
    if (!looked.ok()) return looked.error();
    const std::shared_ptr<const Entry> entry = *looked;
    if (!entry) {
      return Error{ErrorCode::kNotFound,
                   fmt::format("tag '{}' has no template (create it with one: snowid tag create "
                               "{} --template ...)",
                               tag, tag)};
    }
    if (entry->settings.retired) return retired_error(tag);
    if (!entry->format) {
      if (!entry->format_error.empty()) {
        return failed(fmt::format("tag '{}': its template cannot be read by this node: {}", tag,
                                  entry->format_error));
      }
      return failed(fmt::format(
          "tag '{}' carries no template: its numbers are served as segment numbers "
          "(/v1/segment/{})",
          tag, tag));
    }
    const BusinessFormat& format = *entry->format;
    const std::shared_ptr<BusinessState> state = business_state(tag);
    std::unique_lock lock(state->mutex);
    const milliseconds now = clock_->now();
    const long long second = now.count() / 1000;
    if (second != state->civil_second || entry->settings.version != state->civil_version) {
      state->civil = format.civil_time(now);
      state->civil_second = second;
      state->civil_version = entry->settings.version;
    }
    const std::string label = format.period_label(state->civil);
    const std::size_t first = out.size();
    out.reserve(first + count);
    for (std::size_t i = 0; i < count; ++i) {
      if (!state->filled || state->label != label || state->version != entry->settings.version ||
          state->next >= state->end) {
        Status filled = fill(tag, *entry, format, label, *state, lock);
        if (!filled.ok()) {
          // Numbers already taken for this batch are skipped, never reissued.
          out.resize(first);
          return filled;
        }
      }
      std::string id;
      format.render(state->civil, state->next++, id);
      out.push_back(std::move(id));
    }
    state->stats.issued += count;
    if (!state->standby && !state->prefetch_pending &&
        state->next - state->first >= (state->end - state->first) / 2) {
      state->prefetch_pending = true;
      request_prefetch({std::string(tag), state, state->label, state->version,
                        entry->settings.step, state->increment});
    }
    return {};
  }

  Result<TagView> create(const TagCreation& creation, std::string_view actor) override {
    if (Status valid = check_tag(creation.tag); !valid.ok()) return valid.error();
    if (Status valid = check_step(creation.step); !valid.ok()) return valid.error();
    if (creation.start < 0 || creation.start > kMaxStart) {
      return invalid_argument(
          fmt::format("start must be between 0 and {}, got {}", kMaxStart, creation.start));
    }
    TagSettings settings;
    settings.template_text = creation.template_text;
    settings.zone = creation.zone.empty() ? "UTC" : creation.zone;
    settings.step = creation.step;
    if (Status valid = check_template(settings); !valid.ok()) return valid.error();
    std::lock_guard admin(admin_mutex_);
    auto existing = read_settings(creation.tag);
    if (!existing.ok()) return existing.error();
    if (*existing && !(*existing)->retired) {
      return Error{ErrorCode::kAlreadyExists,
                   fmt::format("tag '{}' already exists", creation.tag)};
    }
    if (*existing) return recreate(creation, std::move(settings), (*existing)->version, actor);
    // A tag row may exist without settings (made with `snowid segment
    // create`, or a create cut short): then it is an existing tag.
    auto present = read_tag_row(creation.tag);
    if (!present.ok()) return present.error();
    if (*present) {
      return Error{ErrorCode::kAlreadyExists,
                   fmt::format("tag '{}' already exists (give it a template with a change)",
                               creation.tag)};
    }
    if (Status admitted = admit_template(creation.tag, settings); !admitted.ok()) {
      return admitted.error();
    }
    Status created = with_store([&](SegmentStore& store) {
      return store.create_tag(creation.tag, creation.start, creation.step, creation.description);
    });
    if (!created.ok()) return created.error();
    Status stored = with_store([&](SegmentStore& store) {
      return store.create_own_row(settings_key(creation.tag), 1, 1, encode_tag_settings(settings));
    });
    if (!stored.ok()) return stored.error();
    audit(actor, creation.tag, "create",
          fmt::format("start {}, step {}, template {}, zone {}", creation.start, creation.step,
                      json_text(settings.template_text), json_text(settings.zone)));
    forget_absent(creation.tag);
    return show(creation.tag);
  }

  // A retired tag created again (admin_mutex_ held): its numbers continue
  // above every one handed out, in its own row and in its periods' rows.
  Result<TagView> recreate(const TagCreation& creation, TagSettings settings,
                           std::int64_t version, std::string_view actor) {
    auto row = read_tag_row(creation.tag);
    if (!row.ok()) return row.error();
    if (*row && creation.start < (*row)->max_id) {
      return failed(fmt::format(
          "tag '{}' was retired with numbers up to {} handed out: it is created again at {} "
          "or above, never below (start {} would repeat numbers)",
          creation.tag, (*row)->max_id, (*row)->max_id, creation.start));
    }
    if (Status admitted = admit_template(creation.tag, settings); !admitted.ok()) {
      return admitted.error();
    }
    if (!*row) {
      Status created = with_store([&](SegmentStore& store) {
        return store.create_tag(creation.tag, creation.start, creation.step,
                                creation.description);
      });
      if (!created.ok()) return created.error();
    } else {
      Status stepped = with_store(
          [&](SegmentStore& store) { return store.set_step(creation.tag, creation.step); });
      if (!stepped.ok()) return stepped.error();
      if (creation.start > (*row)->max_id) {
        Status raised = raise_to(creation.tag, (*row)->max_id, creation.start);
        if (!raised.ok()) return raised.error();
      }
    }
    settings.retired = false;
    Status written = replace_settings(creation.tag, version, settings);
    if (!written.ok()) return written.error();
    audit(actor, creation.tag, "create",
          fmt::format("created again after retirement: start {}, step {}, template {}, zone {}",
                      creation.start, creation.step, json_text(settings.template_text),
                      json_text(settings.zone)));
    return show(creation.tag);
  }

  Result<std::vector<TagView>> list(std::size_t max_tags) override {
    auto rows = with_store_result<std::vector<SegmentTagRecord>>(
        [&](SegmentStore& store) { return store.list_tags(max_tags); });
    if (!rows.ok()) return rows.error();
    auto settings_rows = with_store_result<std::vector<SegmentTagRecord>>(
        [&](SegmentStore& store) { return store.list_own_rows(kSettingsPrefix, kMaxSettingsRows); });
    if (!settings_rows.ok()) return settings_rows.error();
    std::map<std::string, TagSettings, std::less<>> by_tag;
    for (const auto& row : *settings_rows) {
      auto decoded = decode_tag_settings(row.description, row.max_id);
      if (decoded.ok()) by_tag.emplace(row.tag.substr(kSettingsPrefix.size()), *decoded);
    }
    std::vector<TagView> views;
    views.reserve(rows->size());
    for (auto& row : *rows) {
      TagView view{row.tag, row.max_id, row.step, row.description, row.updated_at, {}};
      if (auto found = by_tag.find(row.tag); found != by_tag.end()) view.settings = found->second;
      views.push_back(std::move(view));
    }
    return views;
  }

  Result<TagView> show(std::string_view tag) override {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid.error();
    auto row = read_tag_row(tag);
    if (!row.ok()) return row.error();
    if (!*row) return Error{ErrorCode::kNotFound, fmt::format("unknown segment tag '{}'", tag)};
    TagView view{(*row)->tag, (*row)->max_id, (*row)->step, (*row)->description,
                 (*row)->updated_at, {}};
    auto settings = read_settings(tag);
    if (!settings.ok()) return settings.error();
    if (*settings) {
      view.settings = **settings;
      remember(std::string(tag), **settings);
    }
    return view;
  }

  Result<TagView> change(std::string_view tag, const TagChange& change,
                         std::string_view actor) override {
    if (Status valid = check_tag(tag); !valid.ok()) return valid.error();
    if (!change.step && !change.template_text && !change.zone) {
      return invalid_argument("a change names a step, a template or a zone");
    }
    if (change.step) {
      if (Status valid = check_step(*change.step); !valid.ok()) return valid.error();
    }
    std::lock_guard admin(admin_mutex_);
    auto row = read_tag_row(tag);
    if (!row.ok()) return row.error();
    if (!*row) return Error{ErrorCode::kNotFound, fmt::format("unknown segment tag '{}'", tag)};
    auto existing = read_settings(tag);
    if (!existing.ok()) return existing.error();
    TagSettings before = *existing ? **existing : TagSettings{};
    if (!*existing) before.step = (*row)->step;
    if (before.retired) return retired_error(tag);
    TagSettings after = before;
    if (change.step) after.step = *change.step;
    if (change.template_text) after.template_text = *change.template_text;
    if (change.zone) after.zone = change.zone->empty() ? "UTC" : *change.zone;
    if (Status valid = check_template(after); !valid.ok()) return valid.error();
    if (after.template_text != before.template_text) {
      if (Status admitted = admit_template(tag, after); !admitted.ok()) return admitted.error();
    }
    // The settings first: a change that loses to another node's leaves the
    // tag's row as it was.
    Status written = *existing ? replace_settings(tag, before.version, after)
                               : with_store([&](SegmentStore& store) {
                                   return store.create_own_row(settings_key(tag), 1, 1,
                                                               encode_tag_settings(after));
                                 });
    if (!written.ok()) return written.error();
    if (change.step) {
      Status stepped =
          with_store([&](SegmentStore& store) { return store.set_step(tag, *change.step); });
      if (!stepped.ok()) {
        audit(actor, tag, "change",
              fmt::format("business step {} -> {}; the tag's own step not written: {}",
                          before.step, after.step, stepped.error().message));
        return stepped.error();
      }
    }
    std::string what;
    if (change.step) what += fmt::format("step {} -> {}; ", before.step, after.step);
    if (change.template_text) {
      what += fmt::format("template {} -> {}; ", json_text(before.template_text),
                          json_text(after.template_text));
    }
    if (change.zone) what += fmt::format("zone {} -> {}; ", json_text(before.zone), json_text(after.zone));
    what.resize(what.size() - 2);
    audit(actor, tag, "change", what);
    forget_absent(tag);
    return show(tag);
  }

  Result<TagView> retire(std::string_view tag, std::string_view actor) override {
    if (Status valid = check_tag(tag); !valid.ok()) return valid.error();
    std::lock_guard admin(admin_mutex_);
    auto row = read_tag_row(tag);
    if (!row.ok()) return row.error();
    if (!*row) return Error{ErrorCode::kNotFound, fmt::format("unknown segment tag '{}'", tag)};
    auto existing = read_settings(tag);
    if (!existing.ok()) return existing.error();
    if (*existing && (*existing)->retired) {
      return failed(fmt::format("tag '{}' is retired already", tag));
    }
    TagSettings after = *existing ? **existing : TagSettings{};
    if (!*existing) after.step = (*row)->step;
    after.retired = true;
    Status written = *existing ? replace_settings(tag, (*existing)->version, after)
                               : with_store([&](SegmentStore& store) {
                                   return store.create_own_row(settings_key(tag), 1, 1,
                                                               encode_tag_settings(after));
                                 });
    if (!written.ok()) return written.error();
    audit(actor, tag, "retire", fmt::format("numbers up to {} handed out", (*row)->max_id));
    forget_absent(tag);
    return show(tag);
  }

  Status refresh() override {
    auto rows = with_store_result<std::vector<SegmentTagRecord>>(
        [&](SegmentStore& store) { return store.list_own_rows(kSettingsPrefix, kMaxSettingsRows); });
    if (!rows.ok()) return rows.error();
    auto fresh = std::make_shared<Cache>();
    for (const auto& row : *rows) {
      auto decoded = decode_tag_settings(row.description, row.max_id);
      if (!decoded.ok()) {
        spdlog::error("tag settings row '{}' cannot be read: {}", row.tag.substr(0, 140),
                      decoded.error().message);
        continue;
      }
      fresh->emplace(row.tag.substr(kSettingsPrefix.size()),
                     std::make_shared<const Entry>(make_entry(std::move(*decoded))));
    }
    std::unique_lock lock(cache_mutex_);
    cache_ = std::move(fresh);
    absent_.clear();
    refreshed_ = true;
    return {};
  }

  std::vector<BusinessTagStats> stats() const override {
    std::vector<BusinessTagStats> out;
    std::shared_lock lock(states_mutex_);
    for (const auto& [tag, state] : states_) {
      std::lock_guard state_lock(state->mutex);
      BusinessTagStats s = state->stats;
      s.tag = tag;
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  using Cache = std::map<std::string, std::shared_ptr<const Entry>, std::less<>>;

  // The store is one connection, used by one thread at a time.
  // Every call also notes whether the store answered (note_store).
  Status with_store(const std::function<Status(SegmentStore&)>& call) {
    std::lock_guard lock(store_mutex_);
    Status status = call(*store_);
    note_store(status.ok() ? nullptr : &status.error());
    return status;
  }
  template <typename T>
  Result<T> with_store_result(const std::function<Result<T>(SegmentStore&)>& call) {
    std::lock_guard lock(store_mutex_);
    Result<T> result = call(*store_);
    note_store(result.ok() ? nullptr : &result.error());
    return result;
  }

  void note_store(const Error* error) {
    if (error == nullptr) {
      store_failed_at_.store(0);
    } else if (error->code == ErrorCode::kUnavailable) {
      store_failed_at_.store(std::chrono::steady_clock::now().time_since_epoch().count());
    }
  }

  // A request for business IDs does not wait on a store that failed within
  // kStoreQuietFor (each call may take the store's whole call timeout, on
  // the listener's thread): it is refused at once while the book's thread
  // keeps asking the store, and served again once it answers.
  Status check_store_answers() const {
    const auto failed_at = store_failed_at_.load();
    if (failed_at == 0) return {};
    const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                       std::chrono::steady_clock::duration(failed_at);
    if (since >= kStoreQuietFor) return {};
    return Error{ErrorCode::kUnavailable,
                 "the segment store did not answer a moment ago; retry shortly"};
  }

  Result<std::optional<SegmentTagRecord>> read_tag_row(std::string_view tag) {
    return with_store_result<std::optional<SegmentTagRecord>>(
        [&](SegmentStore& store) { return store.read_tag(tag); });
  }

  Result<std::optional<TagSettings>> read_settings(std::string_view tag) {
    auto row = with_store_result<std::optional<SegmentTagRecord>>(
        [&](SegmentStore& store) { return store.read_own_row(settings_key(tag)); });
    if (!row.ok()) return row.error();
    if (!*row) return std::optional<TagSettings>();
    auto decoded = decode_tag_settings((*row)->description, (*row)->max_id);
    if (!decoded.ok()) return decoded.error();
    return std::optional<TagSettings>(std::move(*decoded));
  }

  Status replace_settings(std::string_view tag, std::int64_t version, const TagSettings& after) {
    auto replaced = with_store_result<bool>([&](SegmentStore& store) {
      return store.replace_own_row(settings_key(tag), version, encode_tag_settings(after));
    });
    if (!replaced.ok()) return replaced.error();
    if (!*replaced) {
      return failed(fmt::format(
          "tag '{}' was changed by another node meanwhile; read it again and retry", tag));
    }
    return {};
  }

  // Raises the tag's max_id from `from` to `to` by taking the difference as
  // ranges (the store's only way up), so that numbers below `to` are never
  // handed out.
  Status raise_to(std::string_view tag, std::int64_t from, std::int64_t to) {
    if (to - from > kMaxStartRaise) {
      return invalid_argument(fmt::format(
          "start {} is more than {} above the numbers tag '{}' handed out ({}): create it again "
          "at a start closer to them",
          to, kMaxStartRaise, tag, from));
    }
    std::int64_t at = from;
    while (at < to) {
      const std::int64_t increment = std::min<std::int64_t>(to - at, kMaxSegmentStep);
      auto taken = with_store_result<SegmentRange>(
          [&](SegmentStore& store) { return store.take_range(tag, increment); });
      if (!taken.ok()) return taken.error();
      at = taken->end;
    }
    return {};
  }

  static Status check_template(const TagSettings& settings) {
    if (settings.template_text.empty()) return {};
    auto format = BusinessFormat::parse(settings.template_text, settings.zone);
    if (!format.ok()) return format.error();
    return {};
  }

  // Checks `after`'s template against every template the tag has carried
  // (check_business_template_change), then records it among them, before
  // the settings that start serving it are written. An empty template
  // (plain numbers) needs no check: numbers are not strings.
  Status admit_template(std::string_view tag, const TagSettings& after) {
    if (after.template_text.empty()) return {};
    auto next = BusinessFormat::parse(after.template_text, after.zone);
    if (!next.ok()) return next.error();
    const std::string prefix = history_prefix(tag);
    auto rows = with_store_result<std::vector<SegmentTagRecord>>([&](SegmentStore& store) {
      return store.list_own_rows(prefix, static_cast<std::size_t>(kMaxTemplatesPerTag) + 1);
    });
    if (!rows.ok()) return rows.error();
    std::int64_t count = 0;
    for (const auto& row : *rows) {
      const std::string_view number = std::string_view(row.tag).substr(prefix.size());
      if (number.empty() ||
          !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;  // another tag's ("#t:a:b:1" is tag "a:b"'s)
      }
      ++count;
      if (row.description == after.template_text) continue;
      auto earlier = BusinessFormat::parse(row.description, "UTC");
      if (!earlier.ok()) {
        return invalid_argument(fmt::format(
            "tag '{}' carried the template '{}', which this node cannot read, so it cannot check "
            "that '{}' repeats none of its strings",
            tag, row.description, after.template_text));
      }
      if (Status disjoint = check_business_template_change(*earlier, *next); !disjoint.ok()) {
        return invalid_argument(fmt::format(
            "tag '{}' carried the template '{}' before, whose strings may have been handed out: "
            "{}",
            tag, row.description, disjoint.error().message));
      }
    }
    const bool known = std::any_of(rows->begin(), rows->end(), [&](const SegmentTagRecord& row) {
      return row.description == after.template_text;
    });
    if (known) return {};
    if (count >= kMaxTemplatesPerTag) {
      return failed(fmt::format("tag '{}' has carried {} templates, the most it may", tag, count));
    }
    Status recorded = with_store([&](SegmentStore& store) {
      return store.create_own_row(fmt::format("{}{}", prefix, count + 1), 1, 1,
                                  after.template_text);
    });
    if (!recorded.ok() && recorded.error().code == ErrorCode::kAlreadyExists) {
      return failed(fmt::format(
          "tag '{}' was given another template by another node meanwhile; read it again and retry",
          tag));
    }
    return recorded;
  }

  // The settings of `tag`: from the cache, else read from the store (and
  // cached), unless the tag was found absent within kAbsentFor. nullptr: no
  // settings.
  Result<std::shared_ptr<const Entry>> lookup(std::string_view tag, bool read_on_miss) {
    {
      std::shared_lock lock(cache_mutex_);
      if (auto found = cache_->find(tag); found != cache_->end()) return found->second;
      // Plain numbers trust the last refresh, which read every settings row.
      if (!read_on_miss && refreshed_) return std::shared_ptr<const Entry>();
      if (auto absent = absent_.find(tag); absent != absent_.end() &&
                                           std::chrono::steady_clock::now() - absent->second <
                                               kAbsentFor) {
        return std::shared_ptr<const Entry>();
      }
    }
    if (Status answers = check_store_answers(); !answers.ok()) return answers.error();
    auto settings = read_settings(tag);
    if (!settings.ok()) return settings.error();
    if (!*settings) {
      std::unique_lock lock(cache_mutex_);
      if (absent_.size() >= kMaxAbsentRemembered) absent_.clear();
      absent_[std::string(tag)] = std::chrono::steady_clock::now();
      return std::shared_ptr<const Entry>();
    }
    return remember(std::string(tag), std::move(**settings));
  }

  std::shared_ptr<const Entry> remember(std::string tag, TagSettings settings) {
    auto entry = std::make_shared<const Entry>(make_entry(std::move(settings)));
    std::unique_lock lock(cache_mutex_);
    auto copy = std::make_shared<Cache>(*cache_);
    (*copy)[tag] = entry;
    cache_ = std::move(copy);
    absent_.erase(tag);
    return entry;
  }

  void forget_absent(std::string_view tag) {
    std::unique_lock lock(cache_mutex_);
    if (auto found = absent_.find(tag); found != absent_.end()) absent_.erase(found);
  }

  std::shared_ptr<BusinessState> business_state(std::string_view tag) {
    {
      std::shared_lock lock(states_mutex_);
      if (auto found = states_.find(tag); found != states_.end()) return found->second;
    }
    std::unique_lock lock(states_mutex_);
    auto& state = states_[std::string(tag)];
    if (!state) state = std::make_shared<BusinessState>();
    return state;
  }

  // The largest range a node takes of a business tag's period: a hundredth
  // of the width, so that several nodes share a narrow width rather than one
  // holding it all.
  static std::int64_t increment_cap(const BusinessFormat& format) {
    return std::max<std::int64_t>(1, format.max_number() / 100);
  }

  // The next range's size after one that lasted since state.range_taken.
  static std::int64_t next_increment(const BusinessState& state, std::int64_t step,
                                     const BusinessFormat& format) {
    const std::int64_t cap = increment_cap(format);
    if (state.increment == 0) return std::clamp<std::int64_t>(step, 1, cap);
    const auto lasted = std::chrono::duration_cast<milliseconds>(
        std::chrono::steady_clock::now() - state.range_taken);
    return std::clamp<std::int64_t>(
        next_segment_step(state.increment, step, lasted, SegmentAllocatorOptions{}), 1, cap);
  }

  struct Prefetch {
    std::string tag;
    std::shared_ptr<BusinessState> state;
    std::string label;
    std::int64_t version;
    std::int64_t step;
    std::int64_t increment;
  };

  void request_prefetch(Prefetch prefetch) {
    {
      std::lock_guard lock(stop_mutex_);
      prefetches_.push_back(std::move(prefetch));
    }
    stop_.notify_all();
  }

  // On the background thread: takes each requested range, then offers it to
  // its tag as the standby, which keeps it only if nothing moved meanwhile
  // (else its numbers are skipped, never handed out).
  void run_prefetches(std::vector<Prefetch> prefetches) {
    for (Prefetch& prefetch : prefetches) {
      auto taken = take(prefetch.tag, prefetch.label, prefetch.step, prefetch.increment);
      std::lock_guard lock(prefetch.state->mutex);
      prefetch.state->prefetch_pending = false;
      prefetch.state->prefetched.notify_all();
      if (!taken.ok()) continue;  // the request thread takes its own when it runs out
      if (prefetch.state->label == prefetch.label &&
          prefetch.state->version == prefetch.version && !prefetch.state->standby) {
        prefetch.state->standby = *taken;
        prefetch.state->standby_label = prefetch.label;
        prefetch.state->standby_version = prefetch.version;
      }
    }
  }

  // The store's clock must see the same period as this node's: a node whose
  // clock is off would otherwise count in a period the store is not in.
  Status check_store_period(std::string_view tag, const BusinessFormat& format,
                            const std::string& label, BusinessState& state) {
    auto store_now =
        with_store_result<milliseconds>([](SegmentStore& store) { return store.store_time(); });
    if (!store_now.ok()) return store_now.error();
    const std::string store_label = format.period_label(format.civil_time(*store_now));
    if (store_label == label) return {};
    ++state.stats.refused_clock;
    return Error{ErrorCode::kUnavailable,
                 fmt::format("tag '{}': this node's clock is in period {} and the segment "
                             "store's in {}; refusing rather than guessing the period",
                             tag, label, store_label)};
  }

  // Takes the next range of `label` for `tag` into `state` (its mutex held).
  Status fill(std::string_view tag, const Entry& entry, const BusinessFormat& format,
              const std::string& label, BusinessState& state, std::unique_lock<std::mutex>& lock) {
    if (state.version != entry.settings.version) state.exhausted.reset();  // widened, maybe
    if (state.exhausted == std::optional<std::string>(label)) {
      ++state.stats.refused_width;
      return width_error(tag, format, label);
    }
    const bool new_period = !state.filled || state.label != label;
    const bool standby_serves = !new_period && state.standby && state.standby_label == label &&
                                state.standby_version == entry.settings.version;
    if (!standby_serves && !state.prefetch_pending) {
      if (Status answers = check_store_answers(); !answers.ok()) return answers;
    }
    if (new_period && !label.empty()) {
      if (Status agreed = check_store_period(tag, format, label, state); !agreed.ok()) {
        return agreed;
      }
    }
    const std::int64_t largest = format.max_number();
    // A range being taken ahead is waited for rather than taken twice (a
    // second range would come first and the ahead one be skipped, which a
    // narrow width cannot afford). The store call is bounded.
    if (!new_period && state.prefetch_pending) {
      state.prefetched.wait(lock, [&] { return !state.prefetch_pending; });
      // Another request may have filled the state while this one waited
      // (the lock is let go only here): then its range serves this one too,
      // and taking another would skip the rest of it.
      if (state.filled && state.label == label && state.version == entry.settings.version &&
          state.next < state.end) {
        return {};
      }
    }
    state.increment = next_increment(state, entry.settings.step, format);
    state.range_taken = std::chrono::steady_clock::now();
    std::optional<SegmentRange> range;
    if (!new_period && state.standby && state.standby_label == label &&
        state.standby_version == entry.settings.version && state.standby->first >= state.end) {
      range = state.standby;  // taken ahead: no store call
    } else {
      auto taken =
          take(tag, label, entry.settings.step, state.increment);
      if (!taken.ok()) return taken.error();
      range = *taken;
    }
    state.standby.reset();
    state.label = label;
    state.filled = true;
    state.version = entry.settings.version;
    state.stats.period = label;
    // A period without a date starts at the tag's own start; a dated one at 1.
    state.next = std::max<std::int64_t>(range->first, 1);
    state.first = state.next;
    state.end = std::min(range->end, largest == INT64_MAX ? INT64_MAX : largest + 1);
    if (state.next >= state.end) {
      state.exhausted = label;
      state.stats.width_used = 1.0;
      ++state.stats.refused_width;
      spdlog::error("tag '{}' has used every number its template's width allows in period '{}'",
                    tag, label);
      return width_error(tag, format, label);
    }
    state.exhausted.reset();
    state.stats.width_used =
        largest == INT64_MAX ? 0.0
                             : static_cast<double>(state.end - 1) / static_cast<double>(largest);
    const bool warn = state.stats.width_used >= options_.width_warning_fraction;
    state.stats.width_warning = warn;
    if (warn && state.warned != std::optional<std::string>(label)) {
      state.warned = label;
      spdlog::warn(
          "tag '{}' has taken numbers up to {} of the {} its template '{}' allows in period '{}' "
          "({:.0f}%): widen its {{seq}} before the period runs out",
          tag, state.end - 1, largest, format.text(), label, state.stats.width_used * 100);
    }
    return {};
  }

  // take_row(), then the range checked against this node's range memory and
  // remembered (durably) before any of it is handed out.
  Result<SegmentRange> take(std::string_view tag, const std::string& label, std::int64_t step,
                            std::int64_t increment) {
    auto range = take_row(tag, label, step, increment);
    if (!range.ok() || memory_ == nullptr) return range;
    const std::string key = label.empty() ? std::string(tag) : period_key(label, tag);
    if (const auto end = memory_->end_of(options_.store_name, key); end && range->first < *end) {
      const std::string message = fmt::format(
          "tag '{}'{}: the segment store handed out numbers from {} although it handed this node "
          "numbers up to {} before (put back from an older backup, or lowered by hand?): refusing "
          "them, and the tag, until the store is above {} again",
          tag, label.empty() ? "" : fmt::format(" in period {}", label), range->first, *end - 1,
          *end - 1);
      spdlog::error("{}", message);
      return Error{ErrorCode::kUnavailable, message};
    }
    if (Status kept = memory_->remember(options_.store_name, key, range->end); !kept.ok()) {
      return Error{ErrorCode::kUnavailable, kept.error().message};
    }
    return range;
  }

  Result<SegmentRange> take_row(std::string_view tag, const std::string& label, std::int64_t step,
                                std::int64_t increment) {
    if (label.empty()) {
      return with_store_result<SegmentRange>(
          [&](SegmentStore& store) { return store.take_range(tag, increment); });
    }
    const std::string key = period_key(label, tag);
    auto taken = with_store_result<SegmentRange>(
        [&](SegmentStore& store) { return store.take_own_range(key, increment); });
    if (taken.ok() || taken.error().code != ErrorCode::kNotFound) return taken;
    // The period's first range: its row starts at 1. Another node may
    // create it first; then this one takes from that row.
    Status created = with_store([&](SegmentStore& store) {
      return store.create_own_row(key, 1, std::clamp<std::int64_t>(step, kMinSegmentStep, kMaxSegmentStep),
                                  "business IDs of one period");
    });
    if (!created.ok() && created.error().code != ErrorCode::kAlreadyExists) return created.error();
    return with_store_result<SegmentRange>(
        [&](SegmentStore& store) { return store.take_own_range(key, increment); });
  }

  static Error width_error(std::string_view tag, const BusinessFormat& format,
                           const std::string& label) {
    return failed(fmt::format(
        "tag '{}' has used every number its template '{}' has room for ({}) in period '{}': no "
        "longer or repeated string is handed out; widen its {{seq}} (snowid tag change) or wait "
        "for the next period",
        tag, format.text(), format.max_number(), label.empty() ? "all time" : label));
  }

  void audit(std::string_view actor, std::string_view tag, std::string_view action,
             std::string_view what) {
    const std::string line =
        nlohmann::ordered_json{{"time_ms", SystemClock::instance().now().count()},
                               {"actor", actor},
                               {"tag", tag},
                               {"action", action},
                               {"change", what}}
            .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    spdlog::warn("tag {} {} by '{}': {}", action, tag, actor, what);
    if (options_.audit) options_.audit(line);
  }

  void refresh_loop() {
    std::string last_error;
    std::unique_lock lock(stop_mutex_);
    auto refreshed_at = std::chrono::steady_clock::time_point{};
    while (!stopping_) {
      std::vector<Prefetch> prefetches;
      prefetches.swap(prefetches_);
      lock.unlock();
      run_prefetches(std::move(prefetches));
      if (std::chrono::steady_clock::now() - refreshed_at < options_.refresh) {
        lock.lock();
        stop_.wait_until(lock, refreshed_at + options_.refresh,
                         [this] { return stopping_ || !prefetches_.empty(); });
        continue;
      }
      refreshed_at = std::chrono::steady_clock::now();
      Status refreshed = refresh();
      const std::string error = refreshed.ok() ? "" : refreshed.error().message;
      if (error != last_error) {
        if (!refreshed.ok()) {
          spdlog::warn("cannot read the tags' settings from the segment store (the last ones read "
                       "stand): {}",
                       error);
        } else {
          spdlog::info("the tags' settings are read from the segment store again");
        }
        last_error = error;
      }
      lock.lock();
      stop_.wait_until(lock, refreshed_at + options_.refresh,
                       [this] { return stopping_ || !prefetches_.empty(); });
    }
  }

  std::unique_ptr<SegmentStore> store_;
  std::unique_ptr<segment::RangeMemory> memory_;  // null: nothing remembered
  TagBookOptions options_;
  Clock* clock_;
  std::mutex store_mutex_;
  // steady_clock ticks of the last store call that failed unavailable; 0
  // once one succeeds.
  std::atomic<std::chrono::steady_clock::rep> store_failed_at_{0};
  std::mutex admin_mutex_;  // one administration call at a time on this node

  mutable std::shared_mutex cache_mutex_;
  std::shared_ptr<const Cache> cache_ = std::make_shared<Cache>();
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> absent_;
  bool refreshed_ = false;  // a refresh has read every settings row

  mutable std::shared_mutex states_mutex_;
  std::map<std::string, std::shared_ptr<BusinessState>, std::less<>> states_;

  std::mutex stop_mutex_;
  std::condition_variable stop_;
  bool stopping_ = false;
  std::vector<Prefetch> prefetches_;  // guarded by stop_mutex_
  std::thread refresher_;
};

}  // namespace

std::string encode_tag_settings(const TagSettings& settings) {
  // The template last: it may hold any character but a control one.
  return fmt::format("{} retired={} step={} zone={} template={}", kSettingsMagic,
                     settings.retired ? 1 : 0, settings.step, settings.zone,
                     settings.template_text);
}

Result<TagSettings> decode_tag_settings(std::string_view text, std::int64_t version) {
  auto bad = [&](std::string_view why) {
    return invalid_argument(fmt::format("tag settings '{}': {}", text.substr(0, 80), why));
  };
  auto field = [&](std::string_view name, bool last) -> std::optional<std::string_view> {
    const std::string prefix = fmt::format("{}=", name);
    if (!text.starts_with(prefix)) return std::nullopt;
    text.remove_prefix(prefix.size());
    const std::size_t space = last ? text.size() : text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    std::string_view value = text.substr(0, space);
    text.remove_prefix(last ? text.size() : space + 1);
    return value;
  };
  if (!text.starts_with(kSettingsMagic) || text.size() == kSettingsMagic.size() ||
      text[kSettingsMagic.size()] != ' ') {
    return bad("not written by this version of snowid");
  }
  text.remove_prefix(kSettingsMagic.size() + 1);
  TagSettings settings;
  settings.version = version;
  const auto retired = field("retired", false);
  if (!retired || (*retired != "0" && *retired != "1")) return bad("no retired=0|1");
  settings.retired = *retired == "1";
  const auto step = field("step", false);
  if (!step) return bad("no step");
  const auto [end, ec] = std::from_chars(step->data(), step->data() + step->size(), settings.step);
  if (ec != std::errc{} || end != step->data() + step->size() || settings.step < kMinSegmentStep ||
      settings.step > kMaxSegmentStep) {
    return bad("a bad step");
  }
  const auto zone = field("zone", false);
  if (!zone || zone->empty()) return bad("no zone");
  settings.zone = std::string(*zone);
  const auto template_text = field("template", true);
  if (!template_text) return bad("no template");
  settings.template_text = std::string(*template_text);
  return settings;
}

Result<std::unique_ptr<TagBook>> TagBook::open(std::unique_ptr<SegmentStore> store,
                                               TagBookOptions options) {
  // A store that keeps no own rows says so at once.
  auto probe = store->list_own_rows(kSettingsPrefix, 1);
  if (!probe.ok() && probe.error().code == ErrorCode::kInvalidArgument) return probe.error();
  std::unique_ptr<segment::RangeMemory> memory;
  if (!options.range_memory.empty()) {
    auto opened = segment::RangeMemory::open(options.range_memory);
    if (!opened.ok()) return opened.error();
    memory = std::move(*opened);
  }
  auto book =
      std::make_unique<StoreTagBook>(std::move(store), std::move(options), std::move(memory));
  book->start();
  return std::unique_ptr<TagBook>(std::move(book));
}

}  // namespace snowid::tags
