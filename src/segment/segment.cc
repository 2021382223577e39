// The segment allocator: numbers per tag from memory, ranges from the store
// fetched ahead by one background thread.
//
// Each tag has a TagState: two range slots (current and standby), a cursor
// into the current one, and, under the tag's mutex, the bookkeeping of the
// fetch in flight. A request takes numbers from the current range without a
// lock (one compare-and-swap on the cursor, see RangeCursor); the request
// that passes the range's prefetch mark queues a fetch for the standby range;
// when the current range runs out, the first request to notice takes the
// tag's mutex and makes the standby range current. Only if both are empty
// does a request wait for the store (counted in requests_waited), and only
// for request_timeout, or not at all while the store is known to be failing.
//
// Tags are found without a lock too: a tag whose first fetch succeeded is
// entered in KnownTags, an open-addressing table that readers probe with
// atomic loads; tags not (yet) known go through the mutex-guarded map.
//
// The background thread makes the store calls: it takes queued fetches in
// order, retries failed ones with exponential backoff and pings an
// unreachable store until it answers, so the allocator recovers on its own.
// A slow store delays the fetches of every tag behind it. Stores are
// single-threaded, so every store call is made under store_mutex_; the only
// caller besides the background thread is store_rows() (snowidd's /db).
//
// Lock order: tags_mutex_ before a tag's mutex before queue_mutex_ or
// known_tags_mutex_; store_status_mutex_ before queue_mutex_. store_mutex_
// is taken with no other lock held.
#include "snowid/ext/segment.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "range_memory.h"

namespace snowid {
namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// One range as the snapshots show it: numbers from next (every stride-th)
// below end are still to be handed out.
struct Buffer {
  std::int64_t next = 0;
  std::int64_t end = 0;
  std::int64_t prefetch_at = 0;
  std::int64_t size = 0;  // numbers the range held
  std::int64_t stride = 1;

  std::int64_t left() const { return (end - next) / stride; }
};

SegmentRangeState range_state(const Buffer& buffer) {
  return SegmentRangeState{buffer.next, buffer.end, buffer.size, buffer.prefetch_at};
}

// The cursor word: a range generation above a 30-bit offset into the range.
// Generation g's range lives in slot g % 2.
constexpr int kOffsetBits = 30;
constexpr std::uint64_t kOffsetMask = (std::uint64_t{1} << kOffsetBits) - 1;
// Ranges are cut to this size so that an offset always fits its field; the
// numbers cut off are skipped, never handed out (gaps are allowed).
constexpr std::int64_t kMaxRangeSize = static_cast<std::int64_t>(kOffsetMask);
static_assert(kMaxSegmentStep <= kMaxRangeSize, "a configured step must fit one range");

// One range slot. Written only under the tag's mutex, and only while the slot
// is not current (it is the standby slot); read by requests without a lock.
struct RangeSlot {
  std::atomic<std::int64_t> first{0};
  std::atomic<std::int64_t> size{0};    // numbers in the range
  std::atomic<std::int64_t> stride{1};  // between consecutive numbers (ticket servers: > 1)
  std::atomic<std::int64_t> prefetch_offset{0};  // the fetch of the next range starts here
};

// Numbers of the current range, handed out without a lock.
//
// No-repeat invariant, request side: a request reads the cursor word (g, o),
// then slot g % 2's first and size, then compare-and-swaps the word from
// (g, o) to (g, o + n) with o + n <= size, and owns the numbers first + i *
// stride for o <= i < o + n.
// Every operation is sequentially consistent. A successful swap proves that
// the word was still (g, o): no other request took those numbers (each swap
// moves the offset past what it takes, and the offset never goes back within
// a generation), and slot g % 2 still held generation g's range when it was
// read, because the slot is refilled only after the word has moved on to
// generation g + 1 (the swap would then have failed; generations wrap after
// 2^34 ranges, far beyond any request's delay). Only the holder of the tag's
// mutex moves the word to a new generation, and only once the offset has
// reached the range's size, which no request's swap can pass.
struct RangeCursor {
  // The word and the slots on cache lines of their own: requests write the
  // word, and only read the slots, which change once per range.
  alignas(64) std::atomic<std::uint64_t> word{0};  // generation << kOffsetBits | offset
  alignas(64) RangeSlot slots[2];

  struct Taken {
    std::int64_t first = 0;
    std::int64_t count = 0;  // 0: the current range is used up
    std::int64_t stride = 1;
    bool passed_prefetch_mark = false;
  };

  // Takes up to `wanted` numbers from the current range.
  Taken take(std::int64_t wanted) {
    std::uint64_t word_seen = word.load();
    for (;;) {
      const RangeSlot& slot = slots[(word_seen >> kOffsetBits) & 1];
      const auto offset = static_cast<std::int64_t>(word_seen & kOffsetMask);
      const std::int64_t size = slot.size.load();
      const std::int64_t first = slot.first.load();
      const std::int64_t stride = slot.stride.load();
      const std::int64_t prefetch_offset = slot.prefetch_offset.load();
      if (offset >= size) return {};
      const std::int64_t n = std::min(wanted, size - offset);
      if (word.compare_exchange_weak(word_seen, word_seen + static_cast<std::uint64_t>(n))) {
        return Taken{first + offset * stride, n, stride,
                     offset < prefetch_offset && offset + n >= prefetch_offset};
      }
    }
  }

  // The current range as the snapshots show it. Requires: the tag's mutex held.
  Buffer current() const { return buffer(word.load() >> kOffsetBits, word.load() & kOffsetMask); }
  Buffer standby() const { return buffer((word.load() >> kOffsetBits) + 1, 0); }

  std::int64_t current_offset() const {
    return static_cast<std::int64_t>(word.load() & kOffsetMask);
  }
  bool current_used_up() const { return current_offset() >= current_slot().size.load(); }

  // Fills the standby slot. Requires: the tag's mutex held.
  void fill_standby(std::int64_t first, std::int64_t size, std::int64_t stride,
                    std::int64_t prefetch_offset) {
    RangeSlot& slot = slots[((word.load() >> kOffsetBits) + 1) & 1];
    slot.first.store(first);
    slot.size.store(size);
    slot.stride.store(stride);
    slot.prefetch_offset.store(prefetch_offset);
  }

  // Makes the standby range current. Requires: the tag's mutex held and the
  // current range used up, so that no request can move the word meanwhile.
  void switch_to_standby() {
    const std::uint64_t generation = word.load() >> kOffsetBits;
    word.store((generation + 1) << kOffsetBits);
  }

 private:
  const RangeSlot& current_slot() const { return slots[(word.load() >> kOffsetBits) & 1]; }

  Buffer buffer(std::uint64_t generation, std::uint64_t offset) const {
    const RangeSlot& slot = slots[generation & 1];
    Buffer result;
    const std::int64_t first = slot.first.load();
    const std::int64_t stride = slot.stride.load();
    result.size = slot.size.load();
    result.stride = stride;
    result.next = first + static_cast<std::int64_t>(offset) * stride;
    result.end = first + result.size * stride;
    result.prefetch_at = first + slot.prefetch_offset.load() * stride;
    return result;
  }
};

struct TagState : std::enable_shared_from_this<TagState> {
  explicit TagState(std::string name) : tag(std::move(name)) {}

  const std::string tag;

  // Read and written by requests without a lock; its own cache line, apart
  // from the bookkeeping below.
  alignas(64) RangeCursor cursor;

  alignas(64) std::mutex mutex;
  std::condition_variable fetch_finished;

  // Everything below is guarded by `mutex`.
  bool standby_ready = false;  // the standby slot holds the next range
  // A fetch is queued, running, or waiting to be retried. At most one at a time.
  bool fetch_pending = false;
  // Increments when a fetch succeeds or fails, so a waiting request notices.
  std::uint64_t fetches_finished = 0;
  std::optional<Error> last_error;  // of the latest fetch; cleared by a success
  milliseconds retry_delay{0};

  // No-repeat guard: per source store, the end of the latest range accepted
  // for this tag. A new range is accepted only if it starts at or above its
  // source's (see accept_range).
  std::vector<std::int64_t> accepted_end;
  // Restore guard (range_memory.h): set when the store handed a range below
  // the end it handed this node before. No range is taken while it is set;
  // the background thread reads the source's max_id until it reaches
  // refused_below.
  std::optional<std::string> refused;
  std::size_t refused_source = 0;
  std::int64_t refused_below = 0;
  bool known = false;  // a fetch has succeeded
  std::int64_t configured_step = 0;
  std::int64_t step = 0;          // increment of the latest fetch
  milliseconds last_fetch_at{0};  // Clock time of the latest fetch

  std::uint64_t issued_before_current = 0;  // numbers of the ranges used up
  std::uint64_t segments_fetched = 0;
  std::uint64_t requests_waited = 0;
  std::uint64_t store_errors = 0;
  microseconds fetch_latency_total{0};
  microseconds fetch_latency_max{0};

  // Requires: mutex held.
  std::uint64_t numbers_issued() const {
    return issued_before_current + static_cast<std::uint64_t>(cursor.current_offset());
  }
};

// The tags whose first fetch succeeded, found without a lock. Open addressing
// with linear probing, at most half full, so every probe ends at an empty
// slot. Entries are never removed, and the TagStates they point to live as
// long as the allocator (the map in SegmentAllocatorImpl keeps known tags).
// A full table is replaced by one twice its size; the old one is kept until
// the end, since a request may still be probing it.
class KnownTags {
 public:
  KnownTags() { grow(16); }

  TagState* find(std::string_view tag) const {
    const Table& table = *current_.load(std::memory_order_acquire);
    for (std::size_t i = std::hash<std::string_view>{}(tag);; ++i) {
      TagState* state = table.slots[i & table.mask].load(std::memory_order_acquire);
      if (state == nullptr || state->tag == tag) return state;
    }
  }

  // Requires: one caller at a time, and `state` not present.
  void add(TagState* state) {
    if ((count_ + 1) * 2 > tables_.back()->mask + 1) grow((tables_.back()->mask + 1) * 2);
    place(*tables_.back(), state);
    ++count_;
  }

 private:
  struct Table {
    explicit Table(std::size_t capacity)
        : mask(capacity - 1), slots(std::make_unique<std::atomic<TagState*>[]>(capacity)) {}
    std::size_t mask;
    std::unique_ptr<std::atomic<TagState*>[]> slots;
  };

  static void place(Table& table, TagState* state) {
    for (std::size_t i = std::hash<std::string_view>{}(state->tag);; ++i) {
      std::atomic<TagState*>& slot = table.slots[i & table.mask];
      if (slot.load(std::memory_order_relaxed) == nullptr) {
        slot.store(state, std::memory_order_release);
        return;
      }
    }
  }

  void grow(std::size_t capacity) {
    auto table = std::make_unique<Table>(capacity);
    if (!tables_.empty()) {
      const Table& old = *tables_.back();
      for (std::size_t i = 0; i <= old.mask; ++i) {
        if (TagState* state = old.slots[i].load(std::memory_order_relaxed)) place(*table, state);
      }
    }
    current_.store(table.get(), std::memory_order_release);
    tables_.push_back(std::move(table));
  }

  std::atomic<const Table*> current_{nullptr};
  std::vector<std::unique_ptr<Table>> tables_;  // every table made; the last is current
  std::size_t count_ = 0;
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

Error unreachable(const TagState& state, const Error& cause) {
  return Error{ErrorCode::kUnavailable,
               fmt::format("no numbers buffered for segment tag '{}' and the store fails: {}",
                           state.tag, cause.message)};
}

class SegmentAllocatorImpl final : public SegmentAllocator {
 public:
  SegmentAllocatorImpl(std::unique_ptr<SegmentStore> store, SegmentAllocatorOptions options,
                       std::unique_ptr<segment::RangeMemory> memory)
      : store_(std::move(store)),
        options_(std::move(options)),
        clock_(options_.clock != nullptr ? *options_.clock : SystemClock::instance()),
        memory_(std::move(memory)) {
    worker_ = std::thread([this] { run_background(); });
  }

  ~SegmentAllocatorImpl() override {
    {
      std::lock_guard lock(queue_mutex_);
      stopping_ = true;
    }
    queue_changed_.notify_all();
    worker_.join();
  }

  SegmentAllocatorImpl(const SegmentAllocatorImpl&) = delete;
  SegmentAllocatorImpl& operator=(const SegmentAllocatorImpl&) = delete;

  // The request path allocates nothing for one number and makes no store
  // call unless both of the tag's ranges are empty.
  Result<std::int64_t> next(std::string_view tag) override {
    std::int64_t number = 0;
    Status taken =
        take(tag, 1, [&](std::int64_t first, std::int64_t, std::int64_t) { number = first; });
    if (!taken.ok()) return taken.error();
    return number;
  }

  Status next(std::string_view tag, std::size_t count, std::vector<std::int64_t>& out) override {
    if (count == 0 || count > options_.max_batch) {
      return invalid_argument(
          fmt::format("count must be between 1 and {}, got {}", options_.max_batch, count));
    }
    const std::size_t size_before = out.size();
    out.reserve(size_before + count);
    Status taken = take(tag, static_cast<std::int64_t>(count),
                        [&](std::int64_t first, std::int64_t n, std::int64_t stride) {
                          for (std::int64_t i = 0; i < n; ++i) out.push_back(first + i * stride);
                        });
    if (!taken.ok()) out.resize(size_before);  // the numbers taken are skipped, never reissued
    return taken;
  }

  bool dense_ranges() const override { return store_->dense_ranges(); }

  bool serves(std::string_view tag) const override { return known_tags_.find(tag) != nullptr; }

  SegmentReadiness readiness() const override {
    SegmentReadiness result;
    {
      std::lock_guard lock(store_status_mutex_);
      result.store_reachable = store_error_.empty();
      if (!result.store_reachable) result.reason = "segment store unreachable: " + store_error_;
      result.refused_stores = store_refusals_;
    }
    add_refusals(result);
    if (result.store_reachable) return result;
    std::vector<std::string> empty_tags;
    const std::vector<SegmentTagStats> tags = stats();
    for (const SegmentTagStats& tag : tags) {
      if (tag.buffered_numbers == 0) empty_tags.push_back(tag.tag);
    }
    if (tags.empty()) {
      result.ready = false;  // nothing buffered at all
      result.reason += "; no numbers buffered";
    } else if (empty_tags.empty()) {
      result.reason += "; serving from buffered ranges";
    } else {
      result.ready = false;
      result.reason +=
          fmt::format("; no numbers buffered for tag(s) {}", fmt::join(empty_tags, ", "));
    }
    return result;
  }

  std::vector<SegmentTagStats> stats() const override {
    std::vector<SegmentTagStats> result;
    std::shared_lock tags_lock(tags_mutex_);
    for (const auto& [name, state] : tags_) {
      std::lock_guard lock(state->mutex);
      if (!state->known && !state->refused) continue;
      SegmentTagStats& s = result.emplace_back();
      s.refused = state->refused.has_value();
      s.tag = name;
      s.numbers_issued = state->numbers_issued();
      s.segments_fetched = state->segments_fetched;
      s.current_step = state->step;
      s.configured_step = state->configured_step;
      const Buffer current = state->cursor.current();
      s.buffered_numbers =
          current.left() + (state->standby_ready ? state->cursor.standby().left() : 0);
      s.current_range_size = current.size;
      s.standby_ready = state->standby_ready;
      s.requests_waited = state->requests_waited;
      s.store_errors = state->store_errors;
      s.fetch_latency_total = state->fetch_latency_total;
      s.fetch_latency_max = state->fetch_latency_max;
    }
    std::sort(result.begin(), result.end(),
              [](const auto& a, const auto& b) { return a.tag < b.tag; });
    return result;
  }

  SegmentBuffersSnapshot buffers(std::size_t max_tags) const override {
    SegmentBuffersSnapshot snapshot;
    std::shared_lock tags_lock(tags_mutex_);
    snapshot.tags_known = tags_.size();
    std::vector<TagState*> first;
    first.reserve(tags_.size());
    for (const auto& entry : tags_) first.push_back(entry.second.get());
    const auto shown = static_cast<std::ptrdiff_t>(std::min(max_tags, first.size()));
    std::partial_sort(first.begin(), first.begin() + shown, first.end(),
                      [](const TagState* a, const TagState* b) { return a->tag < b->tag; });
    first.resize(static_cast<std::size_t>(shown));
    snapshot.tags.reserve(first.size());
    for (TagState* state : first) {
      std::lock_guard lock(state->mutex);
      SegmentBufferState& view = snapshot.tags.emplace_back();
      view.tag = state->tag;
      view.initialized = state->known;
      view.current = range_state(state->cursor.current());
      if (state->standby_ready) view.standby = range_state(state->cursor.standby());
      view.standby_ready = state->standby_ready;
      view.fetch_pending = state->fetch_pending;
      view.step = state->step;
      view.configured_step = state->configured_step;
    }
    return snapshot;
  }

  Result<std::vector<SegmentTagRecord>> store_rows(std::size_t max_rows) override {
    {
      std::lock_guard lock(store_status_mutex_);
      if (!store_error_.empty()) {
        return Error{ErrorCode::kUnavailable, "segment store unreachable: " + store_error_};
      }
    }
    // Polled rather than a timed lock: ThreadSanitizer does not see
    // pthread_mutex_timedlock take a mutex, and would report its unlock.
    std::unique_lock store_lock(store_mutex_, std::defer_lock);
    const auto deadline = std::chrono::steady_clock::now() + options_.store.call_timeout;
    while (!store_lock.try_lock()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return Error{ErrorCode::kUnavailable,
                     fmt::format("segment store busy: its call in flight took over {} ms",
                                 options_.store.call_timeout.count())};
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    }
    Result<std::vector<SegmentTagRecord>> rows = store_->list_tags(max_rows);
    store_lock.unlock();
    note_store_result(rows.ok() ? nullptr : &rows.error());
    return rows;
  }

 private:
  // The refused tags and stores, in the result and its reason.
  void add_refusals(SegmentReadiness& result) const {
    {
      std::shared_lock tags_lock(tags_mutex_);
      for (const auto& [name, state] : tags_) {
        std::lock_guard lock(state->mutex);
        if (state->refused) result.refused_tags.push_back(*state->refused);
      }
    }
    std::sort(result.refused_tags.begin(), result.refused_tags.end());
    std::vector<std::string> parts;
    if (!result.refused_tags.empty()) {
      result.ready = false;
      parts.push_back(fmt::format("{}", fmt::join(result.refused_tags, "; ")));
    }
    for (const std::string& store : result.refused_stores) parts.push_back(store);
    if (!result.reason.empty()) parts.push_back(result.reason);
    result.reason = fmt::format("{}", fmt::join(parts, "; "));
  }

  std::shared_ptr<TagState> find_or_add(std::string_view tag) {
    {
      std::shared_lock lock(tags_mutex_);
      if (auto it = tags_.find(tag); it != tags_.end()) return it->second;
    }
    std::unique_lock lock(tags_mutex_);
    auto [it, added] = tags_.try_emplace(std::string(tag), nullptr);
    if (added) it->second = std::make_shared<TagState>(std::string(tag));
    return it->second;
  }

  // Unknown tags are not remembered: names a client made up must not grow the map.
  void forget_if_unknown(std::string_view tag) {
    std::unique_lock tags_lock(tags_mutex_);
    auto it = tags_.find(tag);
    if (it == tags_.end()) return;
    std::lock_guard lock(it->second->mutex);
    if (!it->second->known && !it->second->fetch_pending) tags_.erase(it);
  }

  // Takes `count` numbers of `tag` and passes them to `sink(first, n,
  // stride)` in runs of n numbers stride apart, waiting for the store only when both of the
  // tag's ranges are empty.
  // The request path of a known tag takes no lock while its current range
  // lasts: one probe of KnownTags and one compare-and-swap on the cursor.
  template <typename Sink>
  Status take(std::string_view tag, std::int64_t count, Sink&& sink) {
    if (Status valid = validate_segment_tag(tag); !valid.ok()) return valid;
    if (TagState* known = known_tags_.find(tag)) {
      const RangeCursor::Taken taken = known->cursor.take(count);
      if (taken.count > 0) {
        sink(taken.first, taken.count, taken.stride);
        if (taken.passed_prefetch_mark) {
          std::lock_guard lock(known->mutex);
          request_fetch(known->shared_from_this());
        }
        count -= taken.count;
        if (count == 0) return {};
      }
      return take_from(known->shared_from_this(), count, sink);
    }
    const std::shared_ptr<TagState> state = find_or_add(tag);
    Status taken = take_from(state, count, sink);
    if (!taken.ok() && taken.error().code == ErrorCode::kNotFound) forget_if_unknown(tag);
    return taken;
  }

  template <typename Sink>
  Status take_from(const std::shared_ptr<TagState>& shared, std::int64_t count, Sink& sink) {
    TagState& state = *shared;
    SteadyClock::time_point deadline{};  // read the clock only if we must wait
    bool waited = false;
    std::unique_lock lock(state.mutex);
    std::int64_t remaining = count;
    while (remaining > 0) {
      // Requests without the lock may take numbers meanwhile, so the cursor
      // decides; under the lock the range can only shrink, never switch.
      const RangeCursor::Taken taken = state.cursor.take(remaining);
      if (taken.count > 0) {
        sink(taken.first, taken.count, taken.stride);
        remaining -= taken.count;
        if (taken.passed_prefetch_mark) request_fetch(shared);
        continue;
      }
      if (state.standby_ready) {
        make_standby_current(state);
        continue;
      }
      if (state.refused) return Error{ErrorCode::kUnavailable, *state.refused};
      if (!waited) {
        ++state.requests_waited;
        deadline = SteadyClock::now() + options_.request_timeout;
      }
      waited = true;
      if (state.fetch_pending && state.last_error) return unreachable(state, *state.last_error);
      request_fetch(shared);
      const std::uint64_t seen = state.fetches_finished;
      const bool finished = state.fetch_finished.wait_until(
          lock, deadline, [&] { return state.fetches_finished != seen || state.standby_ready; });
      if (!finished) {
        return Error{ErrorCode::kUnavailable,
                     fmt::format("no numbers buffered for segment tag '{}' and the store did not "
                                 "answer within {} ms",
                                 state.tag, options_.request_timeout.count())};
      }
      if (!state.standby_ready && state.last_error) {
        if (state.last_error->code == ErrorCode::kUnavailable) {
          return unreachable(state, *state.last_error);
        }
        return *state.last_error;
      }
    }
    return {};
  }

  // Queues a fetch of the standby range unless one is pending or done.
  // Requires: state->mutex held.
  void request_fetch(const std::shared_ptr<TagState>& state) {
    if (state->fetch_pending || state->standby_ready) return;
    state->fetch_pending = true;
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_back(state);
    }
    queue_changed_.notify_one();
  }

  void run_background() {
    milliseconds ping_delay = options_.retry_initial;
    auto ping_due = SteadyClock::now();
    for (;;) {
      std::shared_ptr<TagState> state;
      bool ping = false;
      {
        std::unique_lock lock(queue_mutex_);
        for (;;) {
          if (stopping_) return;
          if (!queue_.empty()) {
            state = std::move(queue_.front());
            queue_.pop_front();
            break;
          }
          const auto now = SteadyClock::now();
          auto next_due = SteadyClock::time_point::max();
          for (auto it = retries_.begin(); it != retries_.end(); ++it) {
            if (it->first <= now) {
              state = std::move(it->second);
              retries_.erase(it);
              break;
            }
            next_due = std::min(next_due, it->first);
          }
          if (state) break;
          if (ping_needed_) {
            if (ping_due <= now) {
              ping = true;
              break;
            }
            next_due = std::min(next_due, ping_due);
          }
          if (next_due == SteadyClock::time_point::max()) {
            queue_changed_.wait(lock);
          } else {
            queue_changed_.wait_until(lock, next_due);
          }
        }
      }
      if (ping) {
        std::unique_lock store_lock(store_mutex_);
        Status answered = store_->ping();
        note_store_refusals();
        store_lock.unlock();
        note_store_result(answered.ok() ? nullptr : &answered.error());
        ping_delay =
            answered.ok() ? options_.retry_initial : std::min(ping_delay * 2, options_.retry_max);
        ping_due = SteadyClock::now() + ping_delay;
        continue;
      }
      fetch(state);
    }
  }

  // Records whether the store answered; an unreachable store is pinged until
  // it answers so that readiness recovers even when no tag needs a range.
  // Wakes the background thread, which may be idle when the failed call was
  // store_rows()'s.
  void note_store_result(const Error* error) {
    std::lock_guard lock(store_status_mutex_);
    const bool down = error != nullptr && error->code == ErrorCode::kUnavailable;
    store_error_ = down ? error->message : "";
    std::lock_guard queue_lock(queue_mutex_);
    ping_needed_ = down;
    if (down) queue_changed_.notify_one();
  }

  void fetch(const std::shared_ptr<TagState>& state) {
    if (still_refused(state)) return;
    std::optional<std::int64_t> increment;  // none: the store's configured step
    {
      std::lock_guard lock(state->mutex);
      if (state->known) {
        increment = next_segment_step(state->step, state->configured_step,
                                      clock_.now() - state->last_fetch_at, options_);
      }
    }
    std::unique_lock store_lock(store_mutex_);  // the fetch's latency leaves out the wait
    const auto started = SteadyClock::now();
    Result<SegmentRange> range = store_->take_range(state->tag, increment);
    if (!range.ok() && range.error().code == ErrorCode::kNotFound && options_.auto_create_tags) {
      Status created = store_->create_tag(state->tag, options_.auto_create_start,
                                          options_.auto_create_step, "created on first request");
      if (created.ok() || created.error().code == ErrorCode::kAlreadyExists) {
        range = store_->take_range(state->tag, increment);
      } else {
        range = created.error();
      }
    }
    note_store_refusals();
    store_lock.unlock();
    const auto latency = duration_cast<microseconds>(SteadyClock::now() - started);
    note_store_result(range.ok() ? nullptr : &range.error());
    if (range.ok()) {
      if (Status kept = keep_in_memory(*state, *range); !kept.ok()) range = kept.error();
    }

    std::lock_guard lock(state->mutex);
    ++state->fetches_finished;
    state->fetch_latency_total += latency;
    state->fetch_latency_max = std::max(state->fetch_latency_max, latency);
    Status accepted = range.ok() ? accept_range(*state, *range, increment) : range.error();
    if (accepted.ok()) {
      state->fetch_pending = false;
      state->last_error.reset();
      state->retry_delay = milliseconds{0};
      ++state->segments_fetched;
      // With prefetch_at_used_fraction 0 a fresh current range wants its standby at once.
      if (state->cursor.current().next >= state->cursor.current().prefetch_at) {
        request_fetch(state);
      }
    } else {
      ++state->store_errors;
      state->last_error = accepted.error();
      const bool worth_retrying =
          state->refused || (state->known && accepted.error().code == ErrorCode::kUnavailable);
      if (worth_retrying) {
        // fetch_pending stays true: the retry is this fetch, continued (for
        // a refused tag: a read of the store's max_id, see still_refused).
        state->retry_delay =
            state->refused
                ? options_.retry_max
                : std::clamp(state->retry_delay * 2, options_.retry_initial, options_.retry_max);
        std::lock_guard queue_lock(queue_mutex_);
        retries_.emplace_back(SteadyClock::now() + state->retry_delay, state);
      } else {
        state->fetch_pending = false;  // the next request that needs numbers asks again
      }
    }
    state->fetch_finished.notify_all();
    queue_changed_.notify_one();
  }

  // Restore guard, before any number of `range` is handed out: a range
  // that starts below the end its store handed this node before refuses the
  // tag (the store went back); otherwise its end is remembered durably. A
  // failure to remember is a failed fetch: the range is skipped.
  Status keep_in_memory(TagState& state, const SegmentRange& range) {
    if (!memory_) return {};
    const std::string store = store_name(range.source);
    const std::optional<std::int64_t> remembered = memory_->end_of(store, state.tag);
    if (remembered && range.first < *remembered) {
      std::string message = fmt::format(
          "segment tag '{}' refused: store {} handed [{}, {}), below {}, the end of a range it "
          "handed this node before; it went back (restored from an older backup, or max_id "
          "lowered) and may hand out numbers already issued. Raise the tag's max_id above every "
          "number issued (see docs/reliability.md, \"Restores from a backup\"); the tag is "
          "served again once max_id reaches {}",
          state.tag, store, range.first, range.end, *remembered, *remembered);
      report(true, message);
      std::lock_guard lock(state.mutex);
      state.refused_source = range.source;
      state.refused_below = *remembered;
      state.refused = std::move(message);
      return Error{ErrorCode::kUnavailable, *state.refused};
    }
    return memory_->remember(store, state.tag, range.end);
  }

  // For a refused tag: reads its store's max_id, taking nothing, and lifts
  // the refusal once it reached the remembered end (the store was
  // repaired); otherwise looks again after retry_max. True while refused.
  bool still_refused(const std::shared_ptr<TagState>& state) {
    std::size_t source = 0;
    std::int64_t below = 0;
    {
      std::lock_guard lock(state->mutex);
      if (!state->refused) return false;
      source = state->refused_source;
      below = state->refused_below;
    }
    std::unique_lock store_lock(store_mutex_);
    Result<std::int64_t> max_id = store_->max_id(state->tag, source);
    note_store_refusals();
    store_lock.unlock();
    note_store_result(max_id.ok() ? nullptr : &max_id.error());
    std::lock_guard lock(state->mutex);
    if (max_id.ok() && *max_id >= below) {
      // Requests meanwhile wait for the fetch that follows, not for the refusal.
      state->refused.reset();
      state->last_error.reset();
      report(false, fmt::format("segment tag '{}': store {} has max_id {}, at or above the {} it "
                                "handed this node before; serving the tag again",
                                state->tag, store_name(source), *max_id, below));
      return false;
    }
    std::lock_guard queue_lock(queue_mutex_);
    retries_.emplace_back(SteadyClock::now() + options_.retry_max, state);
    return true;
  }

  std::string store_name(std::size_t source) const {
    if (source < options_.store_names.size()) return options_.store_names[source];
    return fmt::format("store-{}", source);
  }

  void report(bool error, std::string_view message) const {
    if (options_.report) options_.report(error, message);
  }

  // Copies the store's refusals for readiness(), reporting new ones.
  // Requires: store_mutex_ held.
  void note_store_refusals() {
    std::vector<std::string> refusals = store_->refusals();
    std::lock_guard lock(store_status_mutex_);
    for (const std::string& refusal : refusals) {
      if (std::find(store_refusals_.begin(), store_refusals_.end(), refusal) ==
          store_refusals_.end()) {
        report(true, refusal);
      }
    }
    store_refusals_ = std::move(refusals);
  }

  // No-repeat invariant, allocator side: every number handed out for a tag
  // comes from a range the store gave this allocator alone (see
  // segment_store.cc), and ranges are accepted in strictly increasing order:
  // a range must start at or above the end of the previous one. Within a
  // range, RangeCursor hands each number out once and in order, so a tag's
  // numbers strictly increase and none is handed out twice. A store that goes
  // back (max_id lowered by hand, a restored backup) is refused here instead
  // of repeating numbers.
  // Requires: state.mutex held.
  Status accept_range(TagState& state, const SegmentRange& range,
                      std::optional<std::int64_t> increment) {
    if (range.source >= state.accepted_end.size()) {
      state.accepted_end.resize(range.source + 1, std::numeric_limits<std::int64_t>::min());
    }
    std::int64_t& accepted_end = state.accepted_end[range.source];
    if (range.first < accepted_end || range.end <= range.first || range.first < 0 ||
        range.stride < 1) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("segment store returned [{}, {}) for tag '{}', below numbers "
                               "already issued (up to {}); was max_id lowered? refusing it",
                               range.first, range.end, state.tag, accepted_end)};
    }
    accepted_end = range.end;
    if (!state.known) {
      std::lock_guard tags_lock(known_tags_mutex_);
      known_tags_.add(&state);
    }
    state.known = true;
    state.configured_step = range.configured_step;
    state.step = increment.value_or(range.configured_step);
    state.last_fetch_at = clock_.now();
    // Numbers past kMaxRangeSize are skipped: accepted_end stays the range's
    // end. (The last term keeps first + size * stride, the snapshots' end,
    // within 64 bits.)
    const std::int64_t size =
        std::min({(range.end - range.first + range.stride - 1) / range.stride, kMaxRangeSize,
                  (std::numeric_limits<std::int64_t>::max() - range.first) / range.stride});
    const double fraction = std::clamp(options_.prefetch_at_used_fraction, 0.0, 1.0);
    const auto prefetch_offset =
        static_cast<std::int64_t>(std::floor(fraction * static_cast<double>(size)));
    state.cursor.fill_standby(range.first, size, range.stride, prefetch_offset);
    state.standby_ready = true;
    if (state.cursor.current_used_up()) make_standby_current(state);
    return {};
  }

  // Requires: state.mutex held, state.standby_ready, and the current range
  // used up (RangeCursor::switch_to_standby).
  static void make_standby_current(TagState& state) {
    state.issued_before_current += static_cast<std::uint64_t>(state.cursor.current().size);
    state.cursor.switch_to_standby();
    state.standby_ready = false;
  }

  std::unique_ptr<SegmentStore> store_;
  std::mutex store_mutex_;  // held for every call of store_
  const SegmentAllocatorOptions options_;
  Clock& clock_;

  // Every tag requested whose first fetch succeeded or is pending. Known tags
  // are never removed, which keeps known_tags_' pointers valid.
  mutable std::shared_mutex tags_mutex_;
  std::unordered_map<std::string, std::shared_ptr<TagState>, StringHash, std::equal_to<>> tags_;
  std::mutex known_tags_mutex_;  // serialises known_tags_.add
  KnownTags known_tags_;

  std::unique_ptr<segment::RangeMemory> memory_;  // null: nothing remembered

  mutable std::mutex store_status_mutex_;
  std::string store_error_;                  // empty while the store answers
  std::vector<std::string> store_refusals_;  // SegmentStore::refusals() after its latest call

  std::mutex queue_mutex_;
  std::condition_variable queue_changed_;
  std::deque<std::shared_ptr<TagState>> queue_;
  std::vector<std::pair<SteadyClock::time_point, std::shared_ptr<TagState>>> retries_;
  bool ping_needed_ = true;  // probe the store once at start
  bool stopping_ = false;

  std::thread worker_;  // last: starts after every member above exists
};

Status validate_options(const SegmentAllocatorOptions& options) {
  if (!(options.prefetch_at_used_fraction >= 0.0 && options.prefetch_at_used_fraction <= 1.0)) {
    return invalid_argument("prefetch_at_used_fraction must be between 0 and 1");
  }
  if (options.max_step < kMinSegmentStep || options.max_step > kMaxSegmentStep) {
    return invalid_argument(
        fmt::format("max_step must be between {} and {}", kMinSegmentStep, kMaxSegmentStep));
  }
  if (options.grow_below > options.shrink_above) {
    return invalid_argument("grow_below must not exceed shrink_above");
  }
  if (options.request_timeout.count() < 0 || options.retry_initial.count() <= 0 ||
      options.retry_max < options.retry_initial) {
    return invalid_argument("request_timeout >= 0 and 0 < retry_initial <= retry_max required");
  }
  if (options.max_batch == 0) return invalid_argument("max_batch must be at least 1");
  if (options.auto_create_tags &&
      (options.auto_create_start < 0 || options.auto_create_step < kMinSegmentStep ||
       options.auto_create_step > kMaxSegmentStep)) {
    return invalid_argument("auto_create_start must be >= 0 and auto_create_step in range");
  }
  return {};
}

}  // namespace

std::int64_t next_segment_step(std::int64_t current_step, std::int64_t configured_step,
                               milliseconds lasted, const SegmentAllocatorOptions& options) {
  const std::int64_t floor = std::max<std::int64_t>(configured_step, kMinSegmentStep);
  const std::int64_t ceiling = std::min(std::max(options.max_step, floor), kMaxSegmentStep);
  std::int64_t step = std::max(current_step, floor);
  if (lasted < options.grow_below) {
    step = step > ceiling / 2 ? ceiling : step * 2;
  } else if (lasted > options.shrink_above) {
    step = step / 2;
  }
  return std::clamp(step, floor, ceiling);
}

Result<std::unique_ptr<SegmentAllocator>> SegmentAllocator::create(
    std::unique_ptr<SegmentStore> store, SegmentAllocatorOptions options) {
  if (store == nullptr) return invalid_argument("segment allocator needs a store");
  if (Status valid = validate_options(options); !valid.ok()) return valid.error();
  std::unique_ptr<segment::RangeMemory> memory;
  if (!options.range_memory.empty()) {
    auto opened = segment::RangeMemory::open(options.range_memory);
    if (!opened.ok()) return opened.error();
    memory = std::move(*opened);
  }
  return std::unique_ptr<SegmentAllocator>(std::make_unique<SegmentAllocatorImpl>(
      std::move(store), std::move(options), std::move(memory)));
}

Result<std::unique_ptr<SegmentAllocator>> SegmentAllocator::open(std::string_view store_url,
                                                                 SegmentAllocatorOptions options) {
  if (Status valid = validate_options(options); !valid.ok()) return valid.error();
  auto store = open_segment_store(store_url, options.store);
  if (!store.ok()) return store.error();
  if (options.store_names.empty()) {
    for (std::size_t at = 0; at < store_url.size();) {
      const std::size_t space = std::min(store_url.find(' ', at), store_url.size());
      if (space > at) {
        options.store_names.push_back(
            segment::segment_store_name(store_url.substr(at, space - at)));
      }
      at = space + 1;
    }
  }
  return create(std::move(*store), std::move(options));
}

}  // namespace snowid
