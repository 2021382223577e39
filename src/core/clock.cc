// SystemClock and ManualClock.
//
// SystemClock::now() keeps, per thread, its last CLOCK_REALTIME reading and
// the cycle counter (TSC) value taken just before it. While fewer cycles have
// passed than the time left in that reading's millisecond (less a margin of
// 20 us and 2% for calibration error), the millisecond is still the current
// one and the reading is returned again. The invariant: now() returns only
// values a real clock read produced, and a reused value is never reused past
// the end of its millisecond. A TSC that jumps backwards (another core, VM
// migration) makes the unsigned difference huge, which forces a real read.
#include "snowid/clock.h"

#include <algorithm>
#include <ctime>
#include <thread>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace snowid {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr long long kNanosPerMilli = 1'000'000;
constexpr long long kMarginNanos = 20'000;

long long monotonic_raw_nanos() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// Cycles per nanosecond of an invariant TSC, or 0 where there is none (then
// every now() reads the clock).
double measure_tsc_rate() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) == 0 || (edx & (1u << 8)) == 0) {
    return 0;  // no invariant TSC
  }
  // Each sample brackets a TSC read between two clock reads at both ends, so
  // a preemption inside a bracket shows as a wide bracket and the sample is
  // dropped. The lowest rate of the good samples is kept: a slower assumed
  // rate makes every reuse budget shorter, never longer.
  constexpr long long kSpan = 1'000'000, kMaxBracket = 5'000;
  double lowest = 0;
  int good = 0;
  for (int attempt = 0; attempt < 20 && good < 3; ++attempt) {
    const long long a0 = monotonic_raw_nanos();
    const unsigned long long c0 = __rdtsc();
    const long long b0 = monotonic_raw_nanos();
    long long a1 = b0;
    while (a1 - b0 < kSpan) a1 = monotonic_raw_nanos();
    const unsigned long long c1 = __rdtsc();
    const long long b1 = monotonic_raw_nanos();
    if (b0 - a0 > kMaxBracket || b1 - a1 > kMaxBracket || c1 <= c0) continue;
    // Cycles counted over at least (a1 - b0) and at most (b1 - a0) nanoseconds.
    const double rate = static_cast<double>(c1 - c0) / static_cast<double>(b1 - a0);
    lowest = good == 0 ? rate : std::min(lowest, rate);
    ++good;
  }
  if (good < 3 || lowest < 0.1 || lowest > 20.0) return 0;  // do not trust the counter
  return lowest * 0.98;
#else
  return 0;
#endif
}

double tsc_cycles_per_nano() {
  static const double rate = measure_tsc_rate();
  return rate;
}

unsigned long long read_tsc() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return 0;
#endif
}

struct ThreadReading {
  long long unix_ms = 0;
  unsigned long long tsc = 0;
  unsigned long long budget_cycles = 0;  // 0: nothing to reuse
};

thread_local ThreadReading t_reading;

}  // namespace

milliseconds SystemClock::now() {
  ThreadReading& r = t_reading;
  if (read_tsc() - r.tsc < r.budget_cycles) return milliseconds{r.unix_ms};
  return now_fresh();
}

milliseconds SystemClock::now_fresh() {
  const unsigned long long tsc = read_tsc();
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long ms = ts.tv_sec * 1000LL + ts.tv_nsec / kNanosPerMilli;
  const long long nanos_left = kNanosPerMilli - ts.tv_nsec % kNanosPerMilli - kMarginNanos;
  ThreadReading& r = t_reading;
  r.unix_ms = ms;
  r.tsc = tsc;
  const double rate = tsc_cycles_per_nano();
  r.budget_cycles = (rate > 0 && nanos_left > 0)
                        ? static_cast<unsigned long long>(static_cast<double>(nanos_left) * rate)
                        : 0;
  return milliseconds{ms};
}

void SystemClock::sleep_for(microseconds duration) {
  if (duration >= milliseconds{2}) {
    std::this_thread::sleep_for(duration);
    return;
  }
  // Short waits spin: a sleeping thread wakes tens of microseconds late.
  const auto deadline = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < deadline) {
#if defined(__x86_64__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
  }
}

SystemClock& SystemClock::instance() {
  static SystemClock clock;
  tsc_cycles_per_nano();  // calibrate once, at set-up rather than on the first ID
  return clock;
}

milliseconds ManualClock::now() { return milliseconds{now_.load()}; }

void ManualClock::sleep_for(microseconds duration) {
  slept_us_.fetch_add(duration.count());
  elapsed_us_.fetch_add(duration.count());
  const long long total = sub_ms_us_.fetch_add(duration.count()) + duration.count();
  const long long whole_ms = total / 1000;
  if (whole_ms > 0) {
    sub_ms_us_.fetch_sub(whole_ms * 1000);
    now_.fetch_add(whole_ms);
  }
}

void ManualClock::set(milliseconds unix_time) { now_.store(unix_time.count()); }

void ManualClock::advance(milliseconds delta) {
  now_.fetch_add(delta.count());
  if (delta.count() > 0) elapsed_us_.fetch_add(microseconds{delta}.count());
}

std::chrono::nanoseconds ManualClock::elapsed() { return microseconds{elapsed_us_.load()}; }

WallClockWitness::WallClockWitness(Clock& clock, milliseconds tolerance)
    : clock_(clock),
      tolerance_(tolerance),
      anchor_wall_(clock.now_fresh()),
      anchor_elapsed_(clock.elapsed()) {}

milliseconds WallClockWitness::since_anchor() {
  return std::chrono::duration_cast<milliseconds>(clock_.elapsed() - anchor_elapsed_);
}

milliseconds WallClockWitness::vouched_now() {
  const milliseconds wall = clock_.now_fresh();
  const milliseconds expected = predicted();
  if (wall > expected + tolerance_) return expected;  // a step nothing vouches for
  anchor_wall_ = wall;                                // behind or in line: the new reference
  anchor_elapsed_ = clock_.elapsed();
  return wall;
}

void WallClockWitness::trust(milliseconds unix_time) {
  if (unix_time <= predicted()) return;
  anchor_wall_ = unix_time;
  anchor_elapsed_ = clock_.elapsed();
}

microseconds ManualClock::slept() const { return microseconds{slept_us_.load()}; }

}  // namespace snowid
