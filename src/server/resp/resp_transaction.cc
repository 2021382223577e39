#include "resp_transaction.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

namespace snowid::server {

std::string_view resp_queue_bound_name(RespQueueBound bound) {
  // In RespQueueBound's order.
  constexpr std::array<std::string_view, kRespQueueBounds> kNames{
      "resp_max_queued_commands", "resp_max_pending_bytes", "transaction_ids",
      "resp_max_queued_bytes"};
  return kNames[static_cast<std::size_t>(bound)];
}

bool RespQueues::take(std::uint64_t bytes) {
  std::uint64_t held = bytes_.load(std::memory_order_relaxed);
  do {
    if (bytes > max_bytes_ - std::min(max_bytes_, held)) return false;
  } while (!bytes_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
  commands_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void RespQueues::give_back(std::uint64_t bytes, std::uint64_t commands) {
  bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  commands_.fetch_sub(commands, std::memory_order_relaxed);
}

RespTransaction::RespTransaction(RespTransaction&& other) noexcept
    : limits_(other.limits_),
      queues_(other.queues_),
      aborted_(other.aborted_),
      ids_(other.ids_),
      queued_bytes_(std::exchange(other.queued_bytes_, 0)),
      bytes_(std::move(other.bytes_)),
      commands_(std::move(other.commands_)),
      spans_(std::move(other.spans_)) {
  other.commands_.clear();
}

std::string RespTransaction::queue(const std::vector<std::string_view>& arguments,
                                   std::uint64_t ids) {
  if (aborted_) return {};
  std::uint64_t bytes = kQueuedCommandBytes;
  for (std::string_view argument : arguments) bytes += argument.size() + kQueuedArgumentBytes;
  std::optional<RespQueueBound> bound;
  if (commands_.size() >= limits_.max_commands) {
    bound = RespQueueBound::kCommands;
  } else if (bytes >
             limits_.max_bytes - std::min<std::uint64_t>(limits_.max_bytes, queued_bytes_)) {
    bound = RespQueueBound::kBytes;
  } else if (ids > kMaxTransactionIds - ids_) {
    bound = RespQueueBound::kIds;
  } else if (!queues_->take(bytes)) {
    bound = RespQueueBound::kAllQueues;
  }
  if (bound) {
    queues_->count_refusal(*bound);
    abort();
    return refusal(*bound);
  }
  queued_bytes_ += bytes;
  ids_ += ids;
  commands_.push_back(
      {static_cast<std::uint32_t>(spans_.size()), static_cast<std::uint32_t>(arguments.size())});
  for (std::string_view argument : arguments) {
    spans_.push_back(
        {static_cast<std::uint32_t>(bytes_.size()), static_cast<std::uint32_t>(argument.size())});
    bytes_.append(argument);
  }
  return {};
}

std::string RespTransaction::refusal(RespQueueBound bound) const {
  const std::string name(resp_queue_bound_name(bound));
  switch (bound) {
    case RespQueueBound::kCommands:
      return "ERR the transaction already queues " + name + " (" +
             std::to_string(limits_.max_commands) + ") commands: EXEC it in parts";
    case RespQueueBound::kBytes:
      return "ERR the transaction's queued commands would pass " + name + " (" +
             std::to_string(limits_.max_bytes) + " bytes): EXEC it in parts";
    case RespQueueBound::kIds:
      return "ERR the transaction would hand out more than " + std::to_string(kMaxTransactionIds) +
             " IDs and numbers: EXEC it in parts";
    case RespQueueBound::kAllQueues:
      break;
  }
  return "ERR the queued commands of all connections would pass " + name + " (" +
         std::to_string(queues_->max_bytes()) + " bytes): try the transaction again later";
}

void RespTransaction::abort() {
  aborted_ = true;
  release();
}

void RespTransaction::release() {
  queues_->give_back(std::exchange(queued_bytes_, 0), commands_.size());
  // Swapped with empty ones, so that their memory is freed now.
  std::string().swap(bytes_);
  std::vector<Span>().swap(commands_);
  std::vector<Span>().swap(spans_);
}

std::vector<std::string_view> RespTransaction::command(std::size_t index) const {
  const Span command = commands_[index];
  std::vector<std::string_view> arguments;
  arguments.reserve(command.length);
  for (std::size_t i = command.offset; i < command.offset + command.length; ++i) {
    arguments.emplace_back(bytes_.data() + spans_[i].offset, spans_[i].length);
  }
  return arguments;
}

}  // namespace snowid::server
