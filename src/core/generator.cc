// The lock-free Snowflake generator.
//
// State: one 64-bit atomic word holding (tick << sequence_bits) | sequence of
// the last issued ID, where tick counts time units since the layout's epoch.
//
// THE UNIQUENESS INVARIANT. Every successful compare-exchange on `state_`
// replaces (tick, seq) with a strictly greater pair (tick', seq' + n - 1),
// where (tick', seq') is the first pair handed out. Pairs are ordered by tick,
// then sequence; node fields are constant; so every issued ID is strictly
// greater than every ID issued before it, from any thread. The clock only
// proposes a tick: a clock that reads earlier than the last issued tick can
// make a call wait or fail, never move `state_` backwards. Decisions about
// the clock are made before `state_` changes, so a refused call consumes
// nothing (the original Snowflake reset its sequence before checking for a
// rollback and so repeated IDs once time came back).
//
// THE PERSISTENCE INVARIANT. With a state file, no ID is issued with a tick
// above `ceiling_`, and `ceiling_` is raised only after a mark at least as high
// has been written durably. A restarted generator starts strictly above the
// persisted mark, so even a restart with the clock set back cannot repeat an
// ID from an earlier run.
//
// EXTERNAL BOUNDS. `options.start_above` is a second floor and
// `external_limit` a second ceiling, both given by a caller such as a cluster
// coordinator; `ceiling_` is the lower of the state file's ceiling and the
// external one, so the fast path checks one word for both.
#include "snowid/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <optional>
#include <random>

#include "bit_fields.h"
#include "state_file.h"
#include "time_text.h"

namespace snowid {

using std::chrono::microseconds;
using std::chrono::milliseconds;

namespace {

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// SplitMix64 finaliser: a well-mixed function of the tick, so the random
// sequence start needs no shared PRNG state on the hot path.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A clock running a fixed lead ahead of another (continue_above_mark).
class LeadClock final : public Clock {
 public:
  LeadClock(Clock& wall, milliseconds lead) : wall_(wall), lead_(lead) {}
  milliseconds now() override { return wall_.now() + lead_; }
  milliseconds now_fresh() override { return wall_.now_fresh() + lead_; }
  void sleep_for(microseconds duration) override { wall_.sleep_for(duration); }
  std::chrono::nanoseconds elapsed() override { return wall_.elapsed(); }

 private:
  Clock& wall_;
  milliseconds lead_;
};

}  // namespace

const char* clock_policy_name(ClockPolicy policy) {
  switch (policy) {
    case ClockPolicy::kReject: return "reject";
    case ClockPolicy::kWait: return "wait";
    case ClockPolicy::kMonotonic: return "monotonic";
  }
  return "?";
}

Result<ClockPolicy> parse_clock_policy(std::string_view name) {
  for (auto policy : {ClockPolicy::kReject, ClockPolicy::kWait, ClockPolicy::kMonotonic}) {
    if (name == clock_policy_name(policy)) return policy;
  }
  return invalid_argument(
      fmt::format("unknown clock policy '{}'; expected reject, wait or monotonic", name));
}

const char* sequence_start_name(SequenceStart start) {
  return start == SequenceStart::kZero ? "zero" : "random";
}

Result<SequenceStart> parse_sequence_start(std::string_view name) {
  if (name == "zero") return SequenceStart::kZero;
  if (name == "random") return SequenceStart::kRandom;
  return invalid_argument(
      fmt::format("unknown sequence start '{}'; expected zero or random", name));
}

struct Generator::Impl {
  GeneratorOptions options;
  Clock* clock = nullptr;
  internal::BitFields fields;
  int sequence_bits = 0;
  std::uint64_t sequence_mask = 0;
  std::int64_t epoch_ms = 0;
  std::int64_t unit_ms = 1;
  std::uint64_t node_bits = 0;       // datacenter and worker fields in place
  std::int64_t max_tick = 0;
  std::int64_t drift_ticks = 0;      // lead over the clock allowed without waiting
  std::int64_t reserve_ticks = 0;
  std::uint64_t random_bound = 0;    // 0: sequence starts at zero
  std::uint64_t random_seed = 0;

  alignas(64) std::atomic<std::uint64_t> state{0};
  // min(file_ceiling, external_limit): the last tick that may be issued.
  alignas(64) std::atomic<std::int64_t> ceiling{std::numeric_limits<std::int64_t>::max()};
  // Written under persist_mutex; atomic so that stats() and readiness() may read them.
  std::atomic<std::int64_t> file_ceiling{std::numeric_limits<std::int64_t>::max()};
  std::atomic<std::int64_t> external_limit{std::numeric_limits<std::int64_t>::max()};
  std::atomic<std::int64_t> external_demand{0};  // tick; see GeneratorStats::external_demand
  std::atomic<std::int64_t> wall_high{0};        // highest clock tick seen; for rollback counting
  std::atomic<std::uint64_t> clock_behind_events{0};
  std::atomic<std::uint64_t> refusals{0};
  std::atomic<std::uint64_t> state_write_failures{0};

  std::atomic<bool> persist_failing{false};  // the last state-file write failed
  // Set once, when the state file's ownership is lost (state_file.h); the
  // message is written before the flag and never changes afterwards.
  std::atomic<bool> state_lost{false};
  std::string state_lost_reason;
  std::mutex persist_mutex;  // serialises state-file writes; never taken on the fast path
  std::optional<internal::StateFile> state_file;
  // With a state file: how far ahead of the wall clock the mark may be raised
  // (see WallClockWitness). Used under persist_mutex.
  std::optional<WallClockWitness> witness;
  // With continue_above_mark: the wall clock plus a fixed lead (the clock read).
  std::unique_ptr<Clock> logical_clock;
  milliseconds logical_clock_lead{0};
  std::optional<milliseconds> mark_at_start;

  std::int64_t tick_of(milliseconds unix_time) const {
    const std::int64_t since = unix_time.count() - epoch_ms;
    return unit_ms == 1 ? since : floor_div(since, unit_ms);
  }
  std::int64_t ms_of(std::int64_t tick) const { return epoch_ms + tick * unit_ms; }
  std::int64_t last_tick() const {
    return static_cast<std::int64_t>(state.load(std::memory_order_acquire) >> sequence_bits);
  }

  std::uint64_t start_sequence(std::int64_t tick) const {
    if (random_bound == 0) return 0;
    return mix(static_cast<std::uint64_t>(tick) ^ random_seed) % random_bound;
  }

  Error refuse(Error error) {
    refusals.fetch_add(1, std::memory_order_relaxed);
    return error;
  }

  // `min_tick`: the earliest tick to issue in (0: any).
  Result<IdBlock> reserve(std::uint32_t want, std::int64_t min_tick = 0);
  // What to do when the proposed tick lies ahead of the clock reading `now`.
  // Returns the clock tick to retry with, or nullopt to issue `tick` as it is.
  Result<std::optional<std::int64_t>> on_lead(std::int64_t now, std::int64_t last,
                                              std::int64_t tick, microseconds& waited);
  // Blocks until the clock reaches `tick` or `budget` of waiting is used up.
  bool wait_for_tick(std::int64_t tick, microseconds budget, microseconds& waited);
  Status extend_to(std::int64_t tick);
  // Stops all issuance for good: the state file's ownership is lost.
  // Requires: persist_mutex is held.
  void fence(const std::string& reason);
  Status persist(std::int64_t ceiling_tick);

  // The steps of Generator::create, in their order.
  // The floor the first ID lies above: a tick and what named it.
  struct Floor {
    std::int64_t tick = 0;  // nothing issued yet: "unit 0 used up", the first ID has tick >= 1
    std::string source;     // names the floor in errors; empty: no floor is known
  };
  // Takes `options` after checking them against the layout's fields.
  Status set_up(const GeneratorOptions& options);
  // The bound and seed of SequenceStart::kRandom.
  Status set_random_start();
  // Opens the state file, if any, and finds the floor from its mark and
  // start_above.
  Result<Floor> load_floor();
  // Checks the clock against `floor` as the clock policy says (it may wait,
  // or switch to a logical clock); returns the clock's tick to start from.
  Result<std::int64_t> start_clock(const Floor& floor);
  // Writes the first high-water mark, a reservation above `floor_tick`.
  Status reserve_first_mark(std::int64_t floor_tick);

  // Recomputes `ceiling` from its two parts. Requires: persist_mutex is held.
  void publish_ceiling() {
    ceiling.store(std::min(file_ceiling.load(), external_limit.load()), std::memory_order_release);
  }
};

Result<IdBlock> Generator::Impl::reserve(std::uint32_t want, std::int64_t min_tick) {
  microseconds waited{0};
  std::int64_t now = tick_of(clock->now());
  std::uint64_t old = state.load(std::memory_order_relaxed);
  for (;;) {
    const auto last = static_cast<std::int64_t>(old >> sequence_bits);
    const std::uint64_t last_seq = old & sequence_mask;
    std::int64_t tick;
    std::uint64_t seq;
    if (now > last) [[likely]] {
      tick = now;
      seq = start_sequence(now);
    } else if (last_seq < sequence_mask) {
      tick = last;
      seq = last_seq + 1;
    } else {
      tick = last + 1;  // this unit is used up: the next one
      seq = 0;
    }
    if (tick < min_tick) [[unlikely]] {
      tick = min_tick;
      seq = start_sequence(min_tick);
    }
    if (tick > now) [[unlikely]] {
      auto verdict = on_lead(now, last, tick, waited);
      if (!verdict.ok()) return refuse(verdict.error());
      if (verdict->has_value()) {
        now = **verdict;
        old = state.load(std::memory_order_relaxed);
        continue;
      }
    }
    if (tick > max_tick) [[unlikely]] {
      return refuse(Error{ErrorCode::kTimestampOverflow,
                          fmt::format("the timestamp field is full since {}: the layout's "
                                      "lifetime is over; choose a later epoch or more bits",
                                      format_time(milliseconds{ms_of(max_tick + 1)}))});
    }
    if (tick > ceiling.load(std::memory_order_acquire)) [[unlikely]] {
      if (tick > external_limit.load(std::memory_order_acquire)) {
        std::int64_t seen = external_demand.load(std::memory_order_relaxed);
        while (tick > seen && !external_demand.compare_exchange_weak(seen, tick)) {
        }
        return refuse(Error{ErrorCode::kUnavailable,
                            fmt::format("the external reservation ends at {}; no ID can be "
                                        "issued until it is extended",
                                        format_time(milliseconds{ms_of(external_limit.load())}))});
      }
      Status extended = extend_to(tick);
      if (!extended.ok()) return refuse(extended.error());
      old = state.load(std::memory_order_relaxed);
      continue;
    }
    const std::uint64_t n = std::min<std::uint64_t>(want, sequence_mask - seq + 1);
    const std::uint64_t next = (static_cast<std::uint64_t>(tick) << sequence_bits) | (seq + n - 1);
    if (state.compare_exchange_weak(old, next, std::memory_order_acq_rel,
                                    std::memory_order_relaxed)) [[likely]] {
      if (tick == now && tick > last) wall_high.store(now, std::memory_order_relaxed);
      const std::uint64_t first = (static_cast<std::uint64_t>(tick) << fields.timestamp_shift) |
                                  node_bits | (seq << fields.sequence_shift);
      return IdBlock{static_cast<Id>(first), static_cast<std::uint32_t>(n),
                     Id{1} << fields.sequence_shift};
    }
  }
}

Result<std::optional<std::int64_t>> Generator::Impl::on_lead(std::int64_t now, std::int64_t last,
                                                               std::int64_t tick,
                                                               microseconds& waited) {
  // A reading reused within its millisecond, or taken just before another
  // thread issued at a later unit, may be stale: judge only a fresh one.
  const std::int64_t fresh_ms = clock->now_fresh().count();
  const std::int64_t fresh = tick_of(milliseconds{fresh_ms});
  if (fresh > now) return std::optional<std::int64_t>{fresh};
  if (fresh < 0) {
    return Error{ErrorCode::kClockBeforeEpoch,
                 fmt::format("the clock reads {}, before the layout's epoch {}",
                             format_time(milliseconds{fresh_ms}),
                             format_time(milliseconds{epoch_ms}))};
  }
  std::int64_t seen = wall_high.load(std::memory_order_relaxed);
  while (fresh > seen && !wall_high.compare_exchange_weak(seen, fresh)) {
  }
  if (fresh < last) {
    // Count each step back once: later readings at or above `fresh` do not count again.
    std::int64_t high = wall_high.load(std::memory_order_relaxed);
    if (fresh < high && wall_high.compare_exchange_strong(high, fresh)) {
      clock_behind_events.fetch_add(1, std::memory_order_relaxed);
    }
  }
  const std::int64_t lead = tick - fresh;
  if (options.clock_policy == ClockPolicy::kReject && fresh < last) {
    return Error{ErrorCode::kClockBehind,
                 fmt::format("the clock moved back: it is {} ms behind the last issued ID; the "
                             "reject policy refuses until it catches up",
                             ms_of(last) - fresh_ms)};
  }
  if (lead <= drift_ticks) return std::optional<std::int64_t>{};  // monotonic: issue ahead
  // Waiting until the clock reaches tick - drift_ticks would make the lead acceptable.
  const std::int64_t target = tick - drift_ticks;
  const microseconds needed = milliseconds{ms_of(target) - fresh_ms};
  if (tick == last + 1 && target - fresh == 1) {
    // The unit is used up: the natural wait for the next one, about one unit.
    // It is not charged to the rollback budget: time is passing as it should.
    microseconds unit_wait{0};
    if (!wait_for_tick(target, needed + milliseconds{unit_ms}, unit_wait)) {
      return Error{ErrorCode::kClockBehind,
                   fmt::format("the clock did not reach the next time unit within {} ms",
                               2 * unit_ms)};
    }
    return std::optional<std::int64_t>{tick_of(clock->now())};
  }
  const std::int64_t behind_ms = ms_of(last) - fresh_ms;
  if (options.clock_policy == ClockPolicy::kMonotonic) {
    return Error{ErrorCode::kClockBehind,
                 fmt::format("the clock is {} ms behind the last issued ID, more than the "
                             "monotonic policy's max_drift of {} ms",
                             behind_ms, options.max_drift.count())};
  }
  // kWait: wait out the rollback if the whole call stays within max_wait.
  if (waited + needed > options.max_wait ||
      !wait_for_tick(target, options.max_wait, waited)) {
    return Error{ErrorCode::kClockBehind,
                 fmt::format("the clock is {} ms behind the last issued ID, more than the "
                             "wait policy's max_wait of {} ms",
                             behind_ms, options.max_wait.count())};
  }
  return std::optional<std::int64_t>{tick_of(clock->now())};
}

bool Generator::Impl::wait_for_tick(std::int64_t tick, microseconds budget, microseconds& waited) {
  constexpr microseconds kSpinStep{20};
  for (;;) {
    const std::int64_t now_ms = clock->now().count();
    const std::int64_t gap_ms = ms_of(tick) - now_ms;
    if (gap_ms <= 0) return true;
    if (waited >= budget) return false;
    // Sleep through whole milliseconds but the last, then poll finely.
    const microseconds step = gap_ms > 1 ? milliseconds{gap_ms - 1} : kSpinStep;
    const microseconds slice = std::min(step, budget - waited + kSpinStep);
    clock->sleep_for(slice);
    waited += slice;
  }
}

Status Generator::Impl::persist(std::int64_t ceiling_tick) {
  Status stored = state_file->store(milliseconds{ms_of(ceiling_tick)});
  persist_failing.store(!stored.ok(), std::memory_order_relaxed);
  if (!stored.ok()) {
    state_write_failures.fetch_add(1, std::memory_order_relaxed);
    if (state_file->lost()) fence(stored.error().message);
    return Error{ErrorCode::kStateFile,
                 fmt::format("cannot raise the high-water mark: {}", stored.error().message)};
  }
  file_ceiling.store(ceiling_tick);
  publish_ceiling();
  return {};
}

Status Generator::Impl::extend_to(std::int64_t tick) {
  std::lock_guard lock(persist_mutex);
  if (tick <= ceiling.load(std::memory_order_acquire) || !state_file) return {};
  // `tick` is about to be issued: from now on the mark follows it.
  witness->trust(milliseconds{ms_of(tick)});
  const std::int64_t base = std::max(tick, tick_of(witness->vouched_now()));
  return persist(std::min(base + reserve_ticks, max_tick));
}

void Generator::Impl::fence(const std::string& reason) {
  if (state_lost.load()) return;
  state_lost_reason = reason;
  state_lost.store(true);
  file_ceiling.store(-1);  // no tick is at or below it: every call takes the slow path
  publish_ceiling();
}

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Generator::~Generator() {
  // THE SUCCESSOR INVARIANT (no persisted state): a generator created after
  // this one for the same node id starts from the clock, so this one ends
  // only once the clock has passed every unit it issued. The lead is at most
  // what the policy allowed (max_drift, or one unit): the wait is bounded,
  // and a clock stepped further back than that ends it early (then only a
  // state file protects a successor; the rule is in docs/design.md).
  Impl& g = *impl_;
  if (g.state_file || g.options.external_ceiling || g.options.start_above.count() > 0) return;
  const std::int64_t last = g.last_tick();
  if (last <= 0) return;  // nothing issued
  microseconds waited{0};
  const microseconds budget = g.options.max_drift + milliseconds{2 * g.unit_ms};
  (void)g.wait_for_tick(last + 1, budget, waited);
}

Status Generator::Impl::set_up(const GeneratorOptions& given) {
  options = given;
  const auto& layout = options.layout;
  clock = options.clock != nullptr ? options.clock : &SystemClock::instance();
  fields = internal::bit_fields(layout);
  const auto& f = fields;
  if (options.datacenter_id > f.datacenter_mask) {
    return invalid_argument(fmt::format("datacenter id {} is out of range 0..{} ({} bits)",
                                        options.datacenter_id, f.datacenter_mask,
                                        layout.datacenter_bits));
  }
  if (options.worker_id > f.worker_mask) {
    return invalid_argument(fmt::format("worker id {} is out of range 0..{} ({} bits)",
                                        options.worker_id, f.worker_mask, layout.worker_bits));
  }
  if (options.max_wait.count() < 0 || options.max_drift.count() < 0 ||
      options.max_start_wait.count() < 0) {
    return invalid_argument("max_wait, max_drift and max_start_wait must not be negative");
  }
  if (options.reserve_ahead.count() < 0) {
    return invalid_argument("reserve_ahead must not be negative");
  }
  sequence_bits = layout.sequence_bits;
  sequence_mask = f.sequence_mask;
  epoch_ms = layout.epoch.count();
  unit_ms = layout.time_unit.count();
  node_bits = (options.datacenter_id << f.datacenter_shift) | (options.worker_id << f.worker_shift);
  max_tick = static_cast<std::int64_t>(f.timestamp_mask);
  drift_ticks =
      options.clock_policy == ClockPolicy::kMonotonic ? options.max_drift.count() / unit_ms : 0;
  reserve_ticks = std::max<std::int64_t>(1, options.reserve_ahead.count() / unit_ms);
  if (options.sequence_start == SequenceStart::kRandom) {
    if (Status random = set_random_start(); !random.ok()) return random;
  }

  if (options.start_above.count() < 0) return invalid_argument("start_above must not be negative");
  if (options.external_ceiling) {
    external_limit.store(tick_of(*options.external_ceiling));
    ceiling.store(external_limit.load());
  }
  return {};
}

Status Generator::Impl::set_random_start() {
  const std::uint64_t capacity = fields.sequence_mask + 1;
  std::uint64_t bound = options.random_start_bound;
  if (bound == 0) bound = std::max<std::uint64_t>(1, capacity / 32);
  if (bound > capacity) {
    return invalid_argument(
        fmt::format("random_start_bound {} exceeds the {} sequence numbers "
                    "of a time unit",
                    bound, capacity));
  }
  random_bound = bound;
  std::random_device entropy;
  random_seed = (std::uint64_t{entropy()} << 32) | entropy();
  return {};
}

Result<Generator::Impl::Floor> Generator::Impl::load_floor() {
  Floor floor;
  if (!options.state_file.empty()) {
    auto file = internal::StateFile::open(options.state_file, describe(options.layout),
                                          options.lock_state_directory);
    if (!file.ok()) return file.error();
    state_file.emplace(std::move(*file));
    mark_at_start = state_file->mark();
    if (auto mark = state_file->mark()) {
      if (tick_of(*mark) > max_tick) {
        return Error{ErrorCode::kStateFile,
                     fmt::format("state file {}: its high-water mark {} lies beyond the "
                                 "layout's "
                                 "last time unit ({}): this layout can issue no ID above it",
                                 state_file->path().string(), format_time(*mark),
                                 format_time(milliseconds{ms_of(max_tick)}))};
      }
      floor.tick = std::max<std::int64_t>(0, tick_of(*mark));
      floor.source = "in " + state_file->path().string();
    }
  }
  if (options.start_above.count() > 0 && tick_of(options.start_above) > floor.tick) {
    floor.tick = tick_of(options.start_above);
    floor.source = "given as start_above";
  }
  return floor;
}

Result<std::int64_t> Generator::Impl::start_clock(const Floor& floor) {
  std::int64_t now = tick_of(clock->now_fresh());
  if (floor.source.empty() || now > floor.tick) return now;
  const std::int64_t gap_ms = (floor.tick + 1 - now) * unit_ms;
  const auto behind = [&](std::string_view rest) {
    return Error{ErrorCode::kClockBehind,
                 fmt::format("the clock is {} ms behind the high-water mark {} {}; {}", gap_ms,
                             format_time(milliseconds{ms_of(floor.tick)}), floor.source, rest)};
  };
  const bool within_policy = options.clock_policy == ClockPolicy::kMonotonic
                                 ? milliseconds{gap_ms} <= options.max_drift
                                 : options.clock_policy == ClockPolicy::kWait &&
                                       milliseconds{gap_ms} <= options.max_start_wait;
  if (!within_policy && options.continue_above_mark) {
    // Issue on a logical clock whose first reading lies in the unit above the
    // mark.
    logical_clock_lead = milliseconds{gap_ms};
    logical_clock = std::make_unique<LeadClock>(*clock, milliseconds{gap_ms});
    clock = logical_clock.get();
    return tick_of(clock->now_fresh());
  }
  switch (options.clock_policy) {
    case ClockPolicy::kReject:
      return behind("the reject policy refuses to start until the clock passes it");
    case ClockPolicy::kWait: {
      microseconds waited{0};
      if (within_policy && options.defer_start_wait) break;  // calls refuse until then
      if (!within_policy || !wait_for_tick(floor.tick + 1, options.max_start_wait, waited)) {
        return behind(
            fmt::format("more than max_start_wait ({} ms)", options.max_start_wait.count()));
      }
      break;
    }
    case ClockPolicy::kMonotonic:
      if (!within_policy) {
        return behind(fmt::format("more than the monotonic policy's max_drift ({} ms)",
                                  options.max_drift.count()));
      }
      break;
  }
  return now;
}

Status Generator::Impl::reserve_first_mark(std::int64_t floor_tick) {
  std::lock_guard lock(persist_mutex);
  // The mark may be raised ahead of the clock by up to 100 ms, or one unit,
  // on the clock's word alone; further only by issuing (WallClockWitness).
  witness.emplace(*clock, std::max(milliseconds{100}, options.layout.time_unit));
  const std::int64_t base = std::max(floor_tick + 1, tick_of(clock->now()));
  return persist(std::min(base + reserve_ticks, max_tick));
}

Result<std::unique_ptr<Generator>> Generator::create(const GeneratorOptions& options) {
  Status valid = validate(options.layout);
  if (!valid.ok()) return valid.error();
  auto impl = std::make_unique<Impl>();
  if (Status set = impl->set_up(options); !set.ok()) return set.error();
  auto floor = impl->load_floor();
  if (!floor.ok()) return floor.error();
  impl->state.store((static_cast<std::uint64_t>(floor->tick) << impl->sequence_bits) |
                    impl->sequence_mask);
  auto now = impl->start_clock(*floor);
  if (!now.ok()) return now.error();
  impl->wall_high.store(*now);
  if (impl->state_file) {
    if (Status stored = impl->reserve_first_mark(floor->tick); !stored.ok()) return stored.error();
  }
  return std::unique_ptr<Generator>(new Generator(std::move(impl)));
}

Result<Id> Generator::next() {
  auto block = impl_->reserve(1);
  if (!block.ok()) return block.error();
  return block->first;
}

Result<IdBlock> Generator::next_block(std::uint32_t max_count) {
  if (max_count == 0) return invalid_argument("next_block needs a count of at least 1");
  return impl_->reserve(max_count);
}

Result<IdBlock> Generator::next_block_at_or_after(std::uint32_t max_count,
                                                  std::chrono::milliseconds earliest) {
  if (max_count == 0) return invalid_argument("next_block needs a count of at least 1");
  Impl& g = *impl_;
  // The first unit starting at or after `earliest`.
  const std::int64_t since = earliest.count() - g.epoch_ms;
  const std::int64_t min_tick = since <= 0 ? 0 : (since + g.unit_ms - 1) / g.unit_ms;
  return g.reserve(max_count, min_tick);
}

Status Generator::next(std::span<Id> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    const auto want = static_cast<std::uint32_t>(
        std::min<std::size_t>(out.size() - filled, std::numeric_limits<std::uint32_t>::max()));
    auto block = impl_->reserve(want);
    if (!block.ok()) return block.error();
    for (std::uint32_t i = 0; i < block->count; ++i) out[filled + i] = block->at(i);
    filled += block->count;
  }
  return {};
}

Status Generator::extend_reservation() {
  Impl& g = *impl_;
  if (!g.state_file) return {};
  std::lock_guard lock(g.persist_mutex);
  if (Status held = g.state_file->verify(); !held.ok()) {
    g.fence(held.error().message);
    return held;
  }
  // Ahead of what was issued and of the time the monotonic clock vouches
  // for, never of a wall-clock glitch alone: the mark covers what may be
  // issued (a call at a stepped time raises it itself, in extend_to()).
  const std::int64_t base = std::max(g.last_tick(), g.tick_of(g.witness->vouched_now()));
  if (g.file_ceiling.load() - base >= g.reserve_ticks / 2) return {};
  return g.persist(std::min(base + g.reserve_ticks, g.max_tick));
}

Status Generator::checkpoint() {
  Impl& g = *impl_;
  if (!g.state_file) return {};
  std::lock_guard lock(g.persist_mutex);
  return g.persist(g.last_tick());
}

void Generator::raise_external_ceiling(milliseconds limit) {
  Impl& g = *impl_;
  if (!g.options.external_ceiling) return;
  std::lock_guard lock(g.persist_mutex);
  const std::int64_t tick = g.tick_of(limit);
  if (tick <= g.external_limit.load()) return;
  g.external_limit.store(tick);
  g.publish_ceiling();
}

Status Generator::readiness() const {
  const Impl& g = *impl_;
  if (g.state_lost.load()) return Error{ErrorCode::kStateFile, g.state_lost_reason};
  // The last unit before the clock: read the other way round, a request
  // issuing in the next unit between the two reads would make a clock that
  // is not behind look one unit behind (a spurious 503 under reject).
  const std::int64_t last = g.last_tick();
  const std::int64_t now_ms = g.clock->now_fresh().count();
  const std::int64_t now = g.tick_of(milliseconds{now_ms});
  if (now < 0) {
    return Error{ErrorCode::kClockBeforeEpoch, "the clock reads earlier than the layout's epoch"};
  }
  if (now > g.max_tick) {
    return Error{ErrorCode::kTimestampOverflow, "the layout's timestamp field is full"};
  }
  if (now < last) {
    // Ready exactly when a request arriving now would be served, judged as
    // reserve() judges it, for the worst case: the last unit is used up and
    // the request needs unit last + 1.
    const auto policy = g.options.clock_policy;
    const std::int64_t behind_ms = g.ms_of(last) - now_ms;
    bool serves = false;
    std::int64_t allowed = 0;
    switch (policy) {
      case ClockPolicy::kReject:
        break;  // any step back is refused
      case ClockPolicy::kWait:
        // reserve() waits only when the wait for unit last + 1 fits in max_wait.
        allowed = g.options.max_wait.count();
        serves = g.ms_of(last + 1) - now_ms <= allowed;
        break;
      case ClockPolicy::kMonotonic:
        // reserve() issues up to drift_ticks ahead, then waits one unit.
        allowed = g.options.max_drift.count();
        serves = last - now <= g.drift_ticks;
        break;
    }
    if (!serves) {
      return Error{ErrorCode::kClockBehind,
                   fmt::format("the clock is {} ms behind the last issued ID ({} policy allows {} "
                               "ms)",
                               behind_ms, clock_policy_name(policy), allowed)};
    }
  }
  if (now > g.external_limit.load()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("the external reservation ended at {}",
                             format_time(milliseconds{g.ms_of(g.external_limit.load())}))};
  }
  if (g.persist_failing.load(std::memory_order_relaxed) &&
      g.file_ceiling.load() <= std::max(now, last)) {
    return Error{ErrorCode::kStateFile,
                 "the high-water mark cannot be raised: the state file is not writable"};
  }
  return {};
}

bool Generator::may_wait_for_clock() const {
  const Impl& g = *impl_;
  return g.options.clock_policy == ClockPolicy::kWait && g.tick_of(g.clock->now()) < g.last_tick();
}

GeneratorStats Generator::stats() const {
  const Impl& g = *impl_;
  GeneratorStats s;
  s.clock_behind_events = g.clock_behind_events.load(std::memory_order_relaxed);
  s.refusals = g.refusals.load(std::memory_order_relaxed);
  s.state_write_failures = g.state_write_failures.load(std::memory_order_relaxed);
  const std::int64_t last = g.last_tick();
  if (last > 0) s.last_issued = milliseconds{g.ms_of(last)};
  if (g.state_file) s.high_water = milliseconds{g.ms_of(g.file_ceiling.load())};
  if (g.options.external_ceiling) {
    s.external_ceiling = milliseconds{g.ms_of(g.external_limit.load())};
  }
  const std::int64_t lead = last - g.tick_of(g.clock->now());
  s.drift = milliseconds{std::max<std::int64_t>(0, lead) * g.unit_ms};
  s.mark_at_start = g.mark_at_start;
  if (const std::int64_t demand = g.external_demand.load(); demand > 0) {
    s.external_demand = milliseconds{g.ms_of(demand)};
  }
  s.logical_clock_lead = g.logical_clock_lead;
  return s;
}

const GeneratorOptions& Generator::options() const { return impl_->options; }

}  // namespace snowid
