#include "issuer.h"

#include <fmt/format.h>

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

}  // namespace snowid::server
