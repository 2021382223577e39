#include "trusted_networks.h"

#include <fmt/format.h>

#include <charconv>

namespace snowid::server {

namespace {

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Whether the first `prefix` bits of a and b agree.
bool same_prefix(const unsigned char* a, const unsigned char* b, unsigned prefix) {
  for (unsigned bit = 0; bit < prefix; bit += 8) {
    const unsigned bits = std::min(8u, prefix - bit);
    const auto mask = static_cast<unsigned char>(0xff << (8 - bits));
    if ((a[bit / 8] & mask) != (b[bit / 8] & mask)) return false;
  }
  return true;
}

}  // namespace

Result<TrustedNetworks> TrustedNetworks::parse(std::string_view text) {
  TrustedNetworks out;
  while (!trimmed(text).empty()) {
    const auto comma = text.find(',');
    const std::string_view entry = trimmed(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto slash = entry.find('/');
    boost::system::error_code ec;
    const auto address = boost::asio::ip::make_address(std::string(entry.substr(0, slash)), ec);
    Network network;
    network.v4 = !ec && address.is_v4();
    const unsigned bits = network.v4 ? 32 : 128;
    network.prefix = bits;
    bool ok = !ec;
    if (ok && slash != std::string_view::npos) {
      const std::string_view length = entry.substr(slash + 1);
      const auto [end, error] =
          std::from_chars(length.data(), length.data() + length.size(), network.prefix);
      ok = !length.empty() && error == std::errc{} && end == length.data() + length.size() &&
           network.prefix <= bits;
    }
    if (!ok) {
      return invalid_argument(fmt::format(
          "'{}' is not a network in CIDR form (e.g. 10.0.0.0/8 or fd00::/8)", entry.substr(0, 60)));
    }
    if (network.v4) {
      const auto v4 = address.to_v4().to_bytes();
      std::copy(v4.begin(), v4.end(), network.bytes.begin());
    } else {
      network.bytes = address.to_v6().to_bytes();
    }
    out.networks_.push_back(network);
  }
  return out;
}

bool TrustedNetworks::contains(const boost::asio::ip::address& address) const {
  std::array<unsigned char, 16> bytes{};
  bool v4 = address.is_v4();
  if (v4) {
    const auto b = address.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), bytes.begin());
  } else if (address.to_v6().is_v4_mapped()) {
    v4 = true;
    const auto b =
        boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6()).to_bytes();
    std::copy(b.begin(), b.end(), bytes.begin());
  } else {
    bytes = address.to_v6().to_bytes();
  }
  for (const Network& network : networks_) {
    if (network.v4 == v4 && same_prefix(network.bytes.data(), bytes.data(), network.prefix)) {
      return true;
    }
  }
  return false;
}

}  // namespace snowid::server
