// IdRing: the buffer behind snowid::Client. A bounded ring of IDs with one
// producer (the client's refill thread) and any number of consumers (callers
// of next()), after Dmitry Vyukov's bounded MPMC queue.
//
// Invariants (an ID is handed out at most once):
//   - Every cell carries a sequence number. Cell c is free for the producer
//     at position p (p % capacity == c) when its sequence is p; it holds an
//     ID for position p when its sequence is p + 1.
//   - A consumer claims position p only by moving `head_` from p to p + 1
//     with one compare-and-swap, so each position, and the ID in it, goes to
//     exactly one consumer. It reads the cell after the claim and only then
//     publishes sequence p + capacity (release), handing the cell back.
//   - The producer writes a cell only when it reads sequence p (acquire), so
//     never while a consumer still reads it, and publishes p + 1 (release)
//     after writing, so a consumer never reads a half-written cell.
// take() has no lock, no allocation and no system call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace snowid::client {

class IdRing {
 public:
  // Requires: capacity is a power of two.
  explicit IdRing(std::size_t capacity)
      : cells_(std::make_unique<Cell[]>(capacity)), mask_(capacity - 1) {
    for (std::size_t i = 0; i < capacity; ++i) {
      cells_[i].sequence.store(i, std::memory_order_relaxed);
    }
  }

  std::size_t capacity() const { return mask_ + 1; }

  // Consumer: claims the oldest ID; false if the ring is empty. `position`
  // is the position claimed (for the refill trigger), `expires` what the
  // producer stored with the ID.
  bool take(std::int64_t& id, std::int64_t& expires, std::uint64_t& position) {
    std::uint64_t pos = head_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      const std::uint64_t seq = cell.sequence.load(std::memory_order_acquire);
      const auto lag = static_cast<std::int64_t>(seq - (pos + 1));
      if (lag == 0) {
        if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          id = cell.id;
          expires = cell.expires;
          position = pos;
          cell.sequence.store(pos + capacity(), std::memory_order_release);
          return true;
        }
      } else if (lag < 0) {
        return false;  // the cell at head holds no ID yet: empty
      } else {
        pos = head_.load(std::memory_order_relaxed);  // another consumer took it
      }
    }
  }

  // Producer only: stores one ID at the tail; false if that cell is still
  // full or being read (the ring is full).
  bool put(std::int64_t id, std::int64_t expires) {
    Cell& cell = cells_[tail_ & mask_];
    if (cell.sequence.load(std::memory_order_acquire) != tail_) return false;
    cell.id = id;
    cell.expires = expires;
    cell.sequence.store(tail_ + 1, std::memory_order_release);
    ++tail_;
    return true;
  }

  // Producer only: the `expires` of the oldest buffered ID, false if none.
  // Safe because only the producer writes cells: the one at head cannot
  // change while the producer is here, even if a consumer takes it.
  bool oldest_expires(std::int64_t& expires) const {
    const std::uint64_t pos = head_.load(std::memory_order_relaxed);
    const Cell& cell = cells_[pos & mask_];
    if (cell.sequence.load(std::memory_order_acquire) != pos + 1) return false;
    expires = cell.expires;
    return true;
  }

  // Producer only: the end of what it has put.
  std::uint64_t tail() const { return tail_; }
  // Any thread: positions taken so far (a moment's snapshot).
  std::uint64_t taken() const { return head_.load(std::memory_order_relaxed); }
  // Producer only: IDs buffered (an upper bound while consumers take).
  std::size_t size() const {
    return static_cast<std::size_t>(tail_ - head_.load(std::memory_order_relaxed));
  }

 private:
  struct Cell {
    std::atomic<std::uint64_t> sequence{0};
    std::int64_t id = 0;
    std::int64_t expires = 0;
  };
  static constexpr std::size_t kLine = 64;

  std::unique_ptr<Cell[]> cells_;
  const std::size_t mask_;
  // Consumers' cursor and the producer's, on cache lines of their own.
  alignas(kLine) std::atomic<std::uint64_t> head_{0};
  alignas(kLine) std::uint64_t tail_ = 0;
};

}  // namespace snowid::client
