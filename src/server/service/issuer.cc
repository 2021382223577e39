#include "issuer.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>

namespace snowid::server {

std::string_view issuer_token() {
  static const std::string token = [] {
    std::random_device entropy;
    const std::uint64_t high = entropy();
    const std::uint64_t low = entropy();
    return fmt::format("{:016x}", (high << 32) ^ low);
  }();
  return token;
}

std::string answer_issuer(bool batches_rise) {
  if (batches_rise) return std::string(issuer_token());
  static std::atomic<std::uint64_t> answers{0};
  return fmt::format("{}-{}", issuer_token(), answers.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace snowid::server
