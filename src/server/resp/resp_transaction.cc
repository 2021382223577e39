#include "resp_transaction.h"

#include <algorithm>

namespace snowid::server {

std::string RespTransaction::queue(const std::vector<std::string_view>& arguments,
                                   std::uint64_t ids) {
  std::size_t bytes = 0;
  for (std::string_view argument : arguments) bytes += argument.size();
  std::string refusal;
  if (bytes > max_bytes_ - std::min(max_bytes_, bytes_.size())) {
    refusal = "the transaction's queued commands exceed resp_max_pending_bytes";
  } else if (ids > kMaxTransactionIds - ids_) {
    refusal = "the transaction would hand out more than " + std::to_string(kMaxTransactionIds) +
              " IDs and numbers";
  }
  if (!refusal.empty()) {
    aborted_ = true;
    return refusal + ": EXEC it in parts";
  }
  ids_ += ids;
  commands_.emplace_back(spans_.size(), arguments.size());
  for (std::string_view argument : arguments) {
    spans_.emplace_back(bytes_.size(), argument.size());
    bytes_.append(argument);
  }
  return {};
}

std::vector<std::string_view> RespTransaction::command(std::size_t index) const {
  const auto [first, count] = commands_[index];
  std::vector<std::string_view> arguments;
  arguments.reserve(count);
  for (std::size_t i = first; i < first + count; ++i) {
    arguments.emplace_back(bytes_.data() + spans_[i].first, spans_[i].second);
  }
  return arguments;
}

}  // namespace snowid::server
