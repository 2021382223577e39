// The wall clock a generator reads, injected so tests can move time at will.
//
// snowid timestamps come from CLOCK_REALTIME (std::chrono::system_clock): IDs
// from different nodes and from before a restart must be comparable, which a
// per-boot monotonic clock cannot give. CLOCK_REALTIME can step backwards (NTP,
// VM migration, an operator); the generator, not the clock, guarantees that
// such a step never yields a repeated or smaller ID. Waits and deadlines are
// measured on the monotonic clock so that a step cannot stretch them.
//
// Implementations must be safe to call from many threads at once.
#pragma once

#include <atomic>
#include <chrono>

namespace snowid {

class Clock {
 public:
  virtual ~Clock() = default;

  // Unix time in milliseconds. May return a reading taken earlier on the
  // calling thread, but only while that reading's millisecond is still the
  // current one: the value is always the current millisecond, up to the
  // precision of the machine's cycle counter.
  virtual std::chrono::milliseconds now() = 0;

  // A fresh reading, never reused. The generator calls it before concluding
  // that the clock went backwards.
  virtual std::chrono::milliseconds now_fresh() { return now(); }

  // Blocks the caller for about `duration` (a manual clock advances instead).
  virtual void sleep_for(std::chrono::microseconds duration) = 0;

  // Time elapsed on a clock that never steps (CLOCK_MONOTONIC), from an
  // arbitrary origin: what a step of the wall clock is judged against.
  virtual std::chrono::nanoseconds elapsed() {
    return std::chrono::steady_clock::now().time_since_epoch();
  }
};

// CLOCK_REALTIME. now() costs about 10 ns instead of the 20-25 ns of a
// clock_gettime call: on x86-64 with an invariant TSC it reuses the calling
// thread's last reading while the cycle counter shows that the same
// millisecond is still running, with a safety margin; otherwise it reads the
// clock. sleep_for spins for waits under 2 ms (a sleeping thread wakes
// 50-100 us late, which would cost throughput at a per-millisecond cap).
class SystemClock final : public Clock {
 public:
  std::chrono::milliseconds now() override;
  std::chrono::milliseconds now_fresh() override;
  void sleep_for(std::chrono::microseconds duration) override;

  // The process-wide instance.
  static SystemClock& instance();
};

// A clock that moves only when told to: for tests. sleep_for advances it.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::chrono::milliseconds start) : now_(start.count()) {}

  std::chrono::milliseconds now() override;
  void sleep_for(std::chrono::microseconds duration) override;

  std::chrono::nanoseconds elapsed() override;

  // A step of the wall clock: elapsed() does not move.
  void set(std::chrono::milliseconds unix_time);
  // Time passing (positive: elapsed() moves too) or a step back (negative).
  void advance(std::chrono::milliseconds delta);
  // Total time callers asked to sleep, for tests of bounded waits.
  std::chrono::microseconds slept() const;

 private:
  std::atomic<long long> now_;            // Unix ms
  std::atomic<long long> sub_ms_us_{0};   // sleep remainder below one ms
  std::atomic<long long> slept_us_{0};
  std::atomic<long long> elapsed_us_{0};
};

// How far ahead the wall clock may be trusted when a reservation is raised
// ahead of use (the state file's mark, a coordinator's reservation).
//
// A reading more than `tolerance` ahead of the last trusted reading plus the
// time elapsed() since is a forward step that the monotonic clock did not
// see: a glitch, or a correction that nothing has used yet. Reservations are
// raised ahead of vouched_now(), not of the reading, so a glitch during which
// nothing was issued costs nothing at the next start; once IDs are issued at
// a stepped time, trust() makes that time the new reference.
//
// Not thread-safe: the owner serialises calls.
class WallClockWitness {
 public:
  WallClockWitness(Clock& clock, std::chrono::milliseconds tolerance);

  // The clock's fresh reading, capped at what the monotonic clock vouches for.
  std::chrono::milliseconds vouched_now();
  // IDs were issued at `unix_time`: vouch for it (and what follows) from now
  // on.
  void trust(std::chrono::milliseconds unix_time);

 private:
  std::chrono::milliseconds predicted() { return anchor_wall_ + since_anchor(); }
  std::chrono::milliseconds since_anchor();

  Clock& clock_;
  std::chrono::milliseconds tolerance_;
  std::chrono::milliseconds anchor_wall_;
  std::chrono::nanoseconds anchor_elapsed_;
};

}  // namespace snowid
