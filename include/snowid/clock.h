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

  void set(std::chrono::milliseconds unix_time);
  void advance(std::chrono::milliseconds delta);  // negative moves it back
  // Total time callers asked to sleep, for tests of bounded waits.
  std::chrono::microseconds slept() const;

 private:
  std::atomic<long long> now_;            // Unix ms
  std::atomic<long long> sub_ms_us_{0};   // sleep remainder below one ms
  std::atomic<long long> slept_us_{0};
};

}  // namespace snowid
