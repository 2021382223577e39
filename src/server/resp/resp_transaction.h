// MULTI … EXEC on one RESP connection, as Redis runs it: after MULTI every
// command is checked (known, its arguments, what the service would refuse
// before issuing) and queued, answered +QUEUED; EXEC runs the queue in order
// and answers an array of the replies; DISCARD drops it. A command refused
// while queuing aborts the transaction: EXEC then answers EXECABORT and runs
// nothing, so no number is taken. This class holds the queue alone; the
// connection (resp_service.cc) decides what is queued and runs it.
//
// Bounds, so that queues cannot take the process's memory: a queued
// command holds its arguments' bytes plus kQueuedCommandBytes and
// kQueuedArgumentBytes of bookkeeping (its queued bytes). One transaction
// holds at most max_commands commands (resp_max_queued_commands) and
// max_bytes queued bytes (resp_max_pending_bytes), and would hand out at
// most kMaxTransactionIds IDs and numbers (one EXEC's answer stays a few
// MiB); all the transactions of the listener together hold at most
// RespQueues' max_bytes (resp_max_queued_bytes). A command past any bound is
// refused, and counted by bound in RespQueues. An aborted transaction keeps
// nothing: its queue is given back at once, and what is queued after the
// abort is answered but not kept (EXEC runs none of it).
//
// RespTransaction is not thread-safe: one connection's thread owns it.
// RespQueues is shared by the connections' threads.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace snowid::server {

// The IDs and numbers one transaction may hand out at most (SNOWID.IDS n
// counts n, every other command 1).
inline constexpr std::uint64_t kMaxTransactionIds = 100'000;

// The bounds a queued command can meet, in the order they are checked.
enum class RespQueueBound : std::size_t {
  kCommands,   // resp_max_queued_commands, per transaction
  kBytes,      // resp_max_pending_bytes, per transaction
  kIds,        // kMaxTransactionIds, per transaction
  kAllQueues,  // resp_max_queued_bytes, all transactions together
};
inline constexpr std::size_t kRespQueueBounds = 4;
// The bound's name in /metrics (its option's name, or "transaction_ids").
std::string_view resp_queue_bound_name(RespQueueBound bound);

// What the MULTI queues of every connection of the listener hold together
// (snowidd has one RESP listener: the whole process's), and the commands
// each bound refused. Thread-safe.
class RespQueues {
 public:
  explicit RespQueues(std::uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // Takes `bytes` for one more queued command; false, taking nothing, if
  // all queues would then hold more than max_bytes.
  bool take(std::uint64_t bytes);
  // Gives back what `commands` queued commands of `bytes` queued bytes took.
  void give_back(std::uint64_t bytes, std::uint64_t commands);
  void count_refusal(RespQueueBound bound) {
    refused_[static_cast<std::size_t>(bound)].fetch_add(1, std::memory_order_relaxed);
  }

  std::uint64_t max_bytes() const { return max_bytes_; }
  std::uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  std::uint64_t commands() const { return commands_.load(std::memory_order_relaxed); }
  std::uint64_t refusals(RespQueueBound bound) const {
    return refused_[static_cast<std::size_t>(bound)].load(std::memory_order_relaxed);
  }

 private:
  const std::uint64_t max_bytes_;
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> commands_{0};
  std::array<std::atomic<std::uint64_t>, kRespQueueBounds> refused_{};
};

// One transaction's own bounds (the listener's options).
struct RespTransactionLimits {
  std::size_t max_bytes = 1 << 20;    // resp_max_pending_bytes
  std::size_t max_commands = 10'000;  // resp_max_queued_commands
};

class RespTransaction {
 public:
  // Bookkeeping a queued command holds beside its arguments' bytes.
  static constexpr std::size_t kQueuedCommandBytes = 8;
  static constexpr std::size_t kQueuedArgumentBytes = 8;

  // `queues` outlives the transaction.
  RespTransaction(RespTransactionLimits limits, RespQueues& queues)
      : limits_(limits), queues_(&queues) {}
  // Gives back what the queue holds.
  ~RespTransaction() { release(); }
  // The moved-from transaction holds nothing.
  RespTransaction(RespTransaction&& other) noexcept;
  RespTransaction& operator=(RespTransaction&&) = delete;

  // Copies `arguments` to the end of the queue, counting `ids` toward
  // kMaxTransactionIds. Returns "" if queued (or the transaction was aborted
  // before: then nothing is kept); otherwise the RESP error that names the
  // bound it would pass, and the transaction is aborted.
  std::string queue(const std::vector<std::string_view>& arguments, std::uint64_t ids);

  // Marks the transaction aborted (EXEC will run nothing) and gives back
  // its queue.
  void abort();
  bool aborted() const { return aborted_; }

  std::size_t size() const { return commands_.size(); }
  // The arguments of queued command `index` (< size()), as views into the
  // queue, valid until the transaction is destroyed.
  std::vector<std::string_view> command(std::size_t index) const;

 private:
  // Offsets and lengths fit 32 bits: a queue holds at most
  // resp_max_pending_bytes (1 GiB at most) and fewer arguments.
  struct Span {
    std::uint32_t offset;
    std::uint32_t length;
  };
  static_assert(sizeof(Span) == kQueuedCommandBytes && sizeof(Span) == kQueuedArgumentBytes);

  std::string refusal(RespQueueBound bound) const;
  void release();

  RespTransactionLimits limits_;
  RespQueues* queues_;
  bool aborted_ = false;
  std::uint64_t ids_ = 0;
  std::uint64_t queued_bytes_ = 0;  // taken from queues_
  std::string bytes_;               // every queued argument, back to back
  std::vector<Span> commands_;      // per command: its first argument's index in spans_, how many
  std::vector<Span> spans_;         // per argument: its offset in bytes_, its length
};

}  // namespace snowid::server
