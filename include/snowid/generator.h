// The Snowflake generator: unique, strictly increasing IDs for one
// (datacenter, worker) node.
//
// Uniqueness rests on one invariant, kept in generator.cc: the pair
// (timestamp, sequence) of every issued ID is strictly greater than that of
// every ID issued before it by this generator, or by an earlier generator that
// used the same state file. Node fields are fixed, so IDs strictly increase too.
//
// Thread-safety: every method may be called from any number of threads. next()
// and next_block() take no lock, allocate nothing and make no system call but
// the clock read, except on the rare slow path that extends the persisted
// reservation (see GeneratorOptions::state_file).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "snowid/clock.h"
#include "snowid/decode.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

// What to do when the clock reads earlier than the last issued timestamp.
enum class ClockPolicy {
  // Refuse at once, saying by how much the clock moved back (original Snowflake).
  kReject,
  // Wait for the clock to catch up if that takes at most max_wait, else refuse.
  kWait,
  // Keep issuing from the last issued timestamp, running ahead of the wall
  // clock by at most max_drift; beyond that, refuse. This also absorbs bursts
  // beyond the per-unit sequence capacity by borrowing future units. The default.
  kMonotonic,
};

const char* clock_policy_name(ClockPolicy policy);  // "reject", "wait", "monotonic"
Result<ClockPolicy> parse_clock_policy(std::string_view name);

enum class SequenceStart {
  kZero,    // every time unit starts at sequence 0
  kRandom,  // every time unit starts at a random offset below random_start_bound
};

const char* sequence_start_name(SequenceStart start);  // "zero", "random"
Result<SequenceStart> parse_sequence_start(std::string_view name);

struct GeneratorOptions {
  Layout layout;
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;

  // Default monotonic: small NTP steps and bursts never cost availability, and
  // the timestamps of IDs never run more than max_drift ahead of real time.
  ClockPolicy clock_policy = ClockPolicy::kMonotonic;
  std::chrono::milliseconds max_wait{5};      // kWait: longest rollback waited out per call
  std::chrono::milliseconds max_drift{1000};  // kMonotonic: largest lead over the wall clock

  SequenceStart sequence_start = SequenceStart::kZero;
  // Exclusive bound of the random start; 0 means ids_per_unit / 32 (at least 1).
  std::uint64_t random_start_bound = 0;

  // Optional file holding the persisted high-water mark: a Unix-ms timestamp
  // above every timestamp this node has issued or may issue before the file is
  // written again. The generator keeps it `reserve_ahead` in front of use, so a
  // restart after a crash, even with the clock set back, starts above it. The
  // file is locked ("<file>.lock") for the generator's lifetime.
  std::filesystem::path state_file;
  // Kept below max_drift, so that the monotonic policy restarts after a crash
  // without waiting (the mark is then at most this far ahead of the clock).
  std::chrono::milliseconds reserve_ahead{500};
  // At start, if the clock is behind the mark: kReject refuses; kWait waits up
  // to max_start_wait; kMonotonic starts above the mark if that is within max_drift.
  std::chrono::milliseconds max_start_wait{10000};
  // kWait, with the clock behind the mark by at most max_start_wait: return
  // from create() at once instead of blocking in it; calls are then refused
  // (kClockBehind, and readiness() says so) until the clock has passed the
  // mark. For a server, which answers its probes meanwhile.
  bool defer_start_wait = false;
  // Also lock the directory holding state_file, so that no other process
  // can use it, whatever is done to the files in it (a removed lock file is
  // re-created by the next process; a locked directory is not unlocked).
  // For a directory that belongs to this generator alone (snowidd's state_dir).
  // Without it the directory is locked shared: generators share it with each
  // other, but not with one that locks it for itself.
  bool lock_state_directory = false;
  // The way out when the clock is behind the mark by more than the policy
  // allows at start (IDs were really issued ahead, in a forward clock step):
  // start anyway, on a logical clock that runs a fixed lead ahead of the
  // wall clock, the lead that puts the first ID just above the mark. Every
  // ID then lies that lead ahead of real time, until a restart without this
  // option once the wall clock has passed the mark. Off: refuse as the policy says.
  bool continue_above_mark = false;

  // An external floor in Unix ms, such as the reservation a cluster coordinator
  // read when it claimed this node id (0: none). Every ID's time unit starts
  // after it, exactly as after a state file's mark; with both, the higher wins,
  // and the clock policy applies at start as it does to the mark.
  std::chrono::milliseconds start_above{0};
  // An external ceiling in Unix ms, such as the reservation a cluster
  // coordinator holds for this node (nullopt: none). No ID's time unit starts
  // after it; a call that would need a later unit fails with kUnavailable
  // until raise_external_ceiling() moves it. Checked on the same slow path as
  // the state file's mark, so next() stays as cheap as before.
  std::optional<std::chrono::milliseconds> external_ceiling;

  // The clock to read; nullptr means SystemClock::instance(). Must outlive the generator.
  Clock* clock = nullptr;
};

// Up to `count` IDs issued in one step, all in one time unit:
// at(i) = first + i * stride.
struct IdBlock {
  Id first = 0;
  std::uint32_t count = 0;
  Id stride = 1;

  Id at(std::uint32_t i) const { return first + static_cast<Id>(i) * stride; }
  Id last() const { return at(count - 1); }
};

// Counters and gauges for operators; a consistent-enough snapshot, read without locks.
struct GeneratorStats {
  std::uint64_t clock_behind_events = 0;      // fresh clock reads behind the last issued unit
  std::uint64_t refusals = 0;                 // calls that returned an error
  std::uint64_t state_write_failures = 0;
  std::chrono::milliseconds last_issued{0};   // Unix ms of the last issued unit (0 if none)
  std::chrono::milliseconds high_water{0};    // persisted mark (0 without a state file)
  std::chrono::milliseconds external_ceiling{0};  // start of the last unit allowed (0: none)
  // The latest unit (Unix ms) a call wanted past the external ceiling and was
  // refused for (0: none): what the coordinator should reserve through.
  std::chrono::milliseconds external_demand{0};
  std::chrono::milliseconds drift{0};         // lead of the last issued unit over the clock
  // The mark found in the state file at start (nullopt: none, a first start).
  std::optional<std::chrono::milliseconds> mark_at_start;
  // continue_above_mark: the logical clock's fixed lead over the wall clock (0: none).
  std::chrono::milliseconds logical_clock_lead{0};
};

class Generator {
 public:
  // Validates the options, opens and locks the state file and applies the
  // clock policy if the clock is behind the persisted mark.
  static Result<std::unique_ptr<Generator>> create(const GeneratorOptions& options);

  // Without a state file or an external ceiling, waits until the clock has
  // passed the last issued time unit (at most the lead the policy allowed,
  // plus one unit), so that a generator created afterwards for the same node
  // id, which starts from the clock, cannot repeat its IDs; see
  // docs/design.md, "Generators without persisted state".
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // One ID.
  Result<Id> next();
  // Between 1 and max_count IDs (fewer when the time unit runs out of
  // sequence numbers) in one atomic step. Requires max_count >= 1.
  Result<IdBlock> next_block(std::uint32_t max_count);
  // As next_block, in a time unit starting no earlier than `earliest` (Unix
  // ms). A unit ahead of the clock is treated as a unit borrowed ahead (the
  // monotonic policy issues it within max_drift; wait waits for it within
  // max_wait; otherwise kClockBehind), and the persisted mark covers it.
  // For a caller that must not issue below a floor of its own (ObjectIds
  // after a restart, id_formats.h).
  Result<IdBlock> next_block_at_or_after(std::uint32_t max_count,
                                         std::chrono::milliseconds earliest);
  // Fills `out` completely, strictly increasing, in as few steps as possible.
  // On error, `out` may be partly filled and those IDs are consumed.
  Status next(std::span<Id> out);

  // Persists a mark reserve_ahead beyond now if less than half of it is left.
  // A server calls this from a timer so that next() never waits on the disk.
  Status extend_reservation();
  // Writes the exact high-water mark (the last issued unit) for a clean stop,
  // so that a restart need not skip the reserved time ahead.
  // Requires: no call to next() or next_block() runs concurrently (a call that
  // had read the old reservation could otherwise issue above the new mark).
  // Later calls are fine: they raise the mark again first.
  Status checkpoint();

  // Raises the external ceiling to `limit` (Unix ms); a lower value is
  // ignored, and so is every call unless options().external_ceiling was set
  // (a generator without one has no ceiling to raise). Thread-safe; a
  // server calls it when its coordinator has extended the reservation.
  void raise_external_ceiling(std::chrono::milliseconds limit);

  // Ok if a call to next() made now would issue without waiting beyond the
  // policy's bounds; otherwise the reason (clock behind, state file failing).
  // Consumes nothing. For readiness probes.
  Status readiness() const;

  // True if a call made now may wait for the clock: the wait policy, with the
  // clock behind the last issued unit. A hint (the clock moves on), for a
  // server that keeps such calls off the threads that serve other requests.
  bool may_wait_for_clock() const;

  GeneratorStats stats() const;
  const GeneratorOptions& options() const;

 private:
  struct Impl;
  explicit Generator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snowid
