// Extension header (include/snowid/ext/README.md): for embedding snowid's
// server parts, outside the stable public API; it may change between versions.
//
// Segment mode (Meituan Leaf's "segment" allocator): dense, strictly
// increasing 64-bit numbers per business tag, backed by a SegmentStore.
//
// Each tag has two buffers. Requests take numbers from the current range in
// memory; once a configurable fraction of it is used, a background thread
// fetches the next range from the store, so in steady state no request waits
// for the database. The step adapts like Leaf's: a range used up in under
// `grow_below` doubles the next one (up to max_step), one that lasted longer
// than `shrink_above` halves it (down to the tag's configured step).
//
// Guarantees: a number is never handed out twice, by this allocator, by an
// allocator started later on the same store, or by another node on the same
// store (the store's ranges never overlap). Within one allocator the numbers
// of a tag strictly increase. Numbers are NOT gap-free: a restart skips the
// rest of the ranges the previous process held.
//
// Thread-safety: every method may be called from any number of threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/clock.h"
#include "snowid/error.h"
#include "snowid/ext/segment_store.h"

namespace snowid {

struct SegmentAllocatorOptions {
  // Fetch the next range once this fraction of the current one is used
  // (Leaf: 0.1). 0 fetches at once; 1 fetches only when the range runs out.
  double prefetch_at_used_fraction = 0.1;

  // Dynamic step. A range that lasted less than grow_below doubles the next
  // increment, up to max_step; one that lasted more than shrink_above halves
  // it, never below the tag's configured step (nor above it when the
  // configured step exceeds max_step).
  std::chrono::milliseconds grow_below = std::chrono::minutes{15};
  std::chrono::milliseconds shrink_above = std::chrono::minutes{30};
  std::int64_t max_step = 1'000'000;

  // A request whose tag has no number left waits at most this long for the
  // store, then fails with kUnavailable.
  std::chrono::milliseconds request_timeout{2000};

  // After a failed fetch the background thread retries after retry_initial,
  // doubling up to retry_max, until the store answers.
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_max{5000};

  // Largest count one next(tag, count, out) accepts.
  std::size_t max_batch = 1'000'000;

  // Unknown tags: kNotFound, or create them on first request with these values.
  bool auto_create_tags = false;
  std::int64_t auto_create_start = 1;
  std::int64_t auto_create_step = 1000;

  // Measures how long a range lasted (dynamic step). Null: SystemClock.
  Clock* clock = nullptr;

  // Passed to open_segment_store by SegmentAllocator::open.
  SegmentStoreOptions store;

  // Restores noticed: the file, in the node's state directory, that keeps
  // the highest range end each store handed this node, per tag
  // (src/segment/range_memory.h). A range that starts below it is refused,
  // and so is the tag, until the store hands ranges above it again (the
  // background thread reads the tag's max_id every retry_max, taking
  // nothing). Empty: nothing is remembered. A damaged file fails open/create.
  std::filesystem::path range_memory;
  // The stores' names in that file and in messages, by SegmentRange::source;
  // open() fills them from the URL (no user, password or other secrets).
  // Missing ones are "store-<source>".
  std::vector<std::string> store_names;
  // Called from the background thread with what an operator must see: a
  // range or store refused (`error` true), a refused tag served again.
  std::function<void(bool error, std::string_view message)> report;
};

// Counters of one tag, for /metrics.
struct SegmentTagStats {
  std::string tag;
  std::uint64_t numbers_issued = 0;
  std::uint64_t segments_fetched = 0;
  std::int64_t current_step = 0;      // increment of the next fetch
  std::int64_t configured_step = 0;   // the store's step column (0 before the first fetch)
  std::int64_t buffered_numbers = 0;  // left in the current and the standby range
  std::int64_t current_range_size = 0;
  bool standby_ready = false;         // the next range is already fetched
  std::uint64_t requests_waited = 0;  // requests that found no number and waited for the store
  std::uint64_t store_errors = 0;     // failed fetches
  // The store went back below a range it handed this node (restored from
  // an older backup?): no range is taken for the tag until it is repaired.
  bool refused = false;
  std::chrono::microseconds fetch_latency_total{0};  // over segments_fetched + store_errors
  std::chrono::microseconds fetch_latency_max{0};
};

// One of a tag's two ranges as the allocator holds it: numbers [next, end)
// are still to be handed out. (Leaf's Segment: value, max, step.)
struct SegmentRangeState {
  std::int64_t next = 0;         // the number handed out next
  std::int64_t end = 0;          // exclusive
  std::int64_t size = 0;         // numbers the range held when fetched
  std::int64_t prefetch_at = 0;  // the next range is fetched once `next` reaches this
};

// A tag's double buffer at one moment, read under the tag's lock, so the
// fields agree with each other. (Leaf's SegmentBuffer.)
struct SegmentBufferState {
  std::string tag;
  bool initialized = false;  // a fetch has succeeded: the tag exists in the store
  SegmentRangeState current;
  SegmentRangeState standby;   // all zero unless standby_ready
  bool standby_ready = false;  // the next range is fetched and waits behind `current`
  bool fetch_pending = false;  // a fetch is queued, running, or waiting to be retried
  std::int64_t step = 0;       // increment of the latest fetch
  std::int64_t configured_step = 0;
};

// The first tags by name of those an allocator knows, and how many it knows.
struct SegmentBuffersSnapshot {
  std::vector<SegmentBufferState> tags;
  std::size_t tags_known = 0;
};

struct SegmentReadiness {
  // True if every known tag can issue a number now: the store answers, or
  // it does not but there are tags and every one still has buffered numbers.
  bool ready = true;
  bool store_reachable = true;  // the last store call succeeded (true before the first)
  std::string reason;           // why not ready or degraded; empty if all is well
  // Tags refused because their store went back (each message names the tag
  // and the store, without secrets), then stores of a ticket-server set that
  // are never used (their identity disagrees). A refused tag makes the
  // allocator not ready; a refused store of a set that still serves does not.
  std::vector<std::string> refused_tags;
  std::vector<std::string> refused_stores;
};

class SegmentAllocator {
 public:
  // Opens the store named by `store_url` (see open_segment_store) and starts
  // the background thread. A PostgreSQL server that is down does not fail
  // this call: the allocator reports not ready and recovers when it returns.
  static Result<std::unique_ptr<SegmentAllocator>> open(std::string_view store_url,
                                                        SegmentAllocatorOptions options = {});
  static Result<std::unique_ptr<SegmentAllocator>> create(std::unique_ptr<SegmentStore> store,
                                                          SegmentAllocatorOptions options = {});

  virtual ~SegmentAllocator() = default;

  // The next number of `tag`. kInvalidArgument for a bad tag name, kNotFound
  // for an unknown tag (unless auto_create_tags), kUnavailable if no number
  // is buffered and the store cannot supply one within request_timeout.
  virtual Result<std::int64_t> next(std::string_view tag) = 0;

  // Appends `count` numbers of `tag` to `out`, strictly increasing; a batch
  // may span ranges. 1 <= count <= max_batch. On error `out` is left as it
  // was; numbers already taken for the batch are skipped, never reissued.
  virtual Status next(std::string_view tag, std::size_t count, std::vector<std::int64_t>& out) = 0;

  virtual SegmentReadiness readiness() const = 0;

  // The store's SegmentStore::dense_ranges(): whether a batch taken from one
  // range holds consecutive numbers. No lock, no store call.
  virtual bool dense_ranges() const = 0;

  // True if a fetch for `tag` has succeeded on this allocator, so the tag
  // exists in the store. False for a tag not requested from this allocator
  // yet, even one the store holds. No lock, no store call.
  virtual bool serves(std::string_view tag) const = 0;

  // One entry per tag requested so far, ordered by tag.
  virtual std::vector<SegmentTagStats> stats() const = 0;

  // The double buffers of the first `max_tags` tags by name, tags whose
  // first fetch is still pending included. Takes each tag's lock once, one
  // at a time, and makes no store call.
  virtual SegmentBuffersSnapshot buffers(std::size_t max_tags) const = 0;

  // The store's first `max_rows` rows by tag (SegmentStore::list_tags). The
  // store is shared with the background thread: this waits for its call in
  // flight, then makes one call of its own, each bounded by the store's
  // call_timeout. kUnavailable without a call while the store is known to
  // be unreachable (the background thread's pings notice its return), or if
  // the store fails or stays busy.
  virtual Result<std::vector<SegmentTagRecord>> store_rows(std::size_t max_rows) = 0;
};

// The increment of the fetch that follows a range which lasted `lasted`
// (Leaf's rule, see SegmentAllocatorOptions). Exposed for tests.
std::int64_t next_segment_step(std::int64_t current_step, std::int64_t configured_step,
                               std::chrono::milliseconds lasted,
                               const SegmentAllocatorOptions& options);

}  // namespace snowid
