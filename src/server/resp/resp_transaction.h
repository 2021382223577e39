// MULTI … EXEC on one RESP connection, as Redis runs it: after MULTI every
// command is checked (known, its arguments, what the service would refuse
// before issuing) and queued, answered +QUEUED; EXEC runs the queue in order
// and answers an array of the replies; DISCARD drops it. A command refused
// while queuing aborts the transaction: EXEC then answers EXECABORT and runs
// nothing, so no number is taken. This class holds the queue alone; the
// connection (resp_service.cc) decides what is queued and runs it.
//
// Bounds: the queued commands' bytes at most max_bytes (the listener's
// resp_max_pending_bytes), and the IDs and numbers the queue would hand out
// at most kMaxTransactionIds, so that one EXEC's answer stays a few MiB. A
// command past either bound is refused, which aborts the transaction.
//
// Not thread-safe: one connection's thread owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace snowid::server {

// The IDs and numbers one transaction may hand out at most (SNOWID.IDS n
// counts n, every other command 1).
inline constexpr std::uint64_t kMaxTransactionIds = 100'000;

class RespTransaction {
 public:
  explicit RespTransaction(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Copies `arguments` to the end of the queue, counting `ids` toward
  // kMaxTransactionIds. Returns "" if queued; otherwise why not (the
  // transaction is then aborted).
  std::string queue(const std::vector<std::string_view>& arguments, std::uint64_t ids);

  // Marks the transaction aborted: EXEC will run nothing.
  void abort() { aborted_ = true; }
  bool aborted() const { return aborted_; }

  std::size_t size() const { return commands_.size(); }
  // The arguments of queued command `index` (< size()), as views into the
  // queue, valid until the transaction is destroyed.
  std::vector<std::string_view> command(std::size_t index) const;

 private:
  std::size_t max_bytes_;
  bool aborted_ = false;
  std::uint64_t ids_ = 0;
  std::string bytes_;  // every queued argument, back to back
  // Per command: its first argument's index in spans_, and how many.
  std::vector<std::pair<std::size_t, std::size_t>> commands_;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;  // per argument: offset, length
};

}  // namespace snowid::server
