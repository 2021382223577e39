// A list of client networks in CIDR form ("127.0.0.0/8, ::1/128"), as the
// stream listeners' <protocol>_trusted_networks options give them: a
// connection from one of them counts as authenticated from its first byte
// (stream_server.h). An IPv4 address seen as IPv4-mapped IPv6
// (::ffff:a.b.c.d, on a dual-stack listener) is matched as IPv4.
//
// Thread-safety: immutable once parsed; contains() from any thread.
#pragma once

#include <array>
#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <string_view>
#include <vector>

#include "snowid/error.h"

namespace snowid::server {

class TrustedNetworks {
 public:
  // Comma-separated networks, each ADDRESS/PREFIX (a bare address is a
  // network of one); "" is none. kInvalidArgument naming the entry that is
  // not one.
  static Result<TrustedNetworks> parse(std::string_view text);

  bool contains(const boost::asio::ip::address& address) const;
  bool empty() const { return networks_.empty(); }

 private:
  struct Network {
    std::array<unsigned char, 16> bytes{};  // IPv4 in the first 4
    unsigned prefix = 0;                    // bits that must match
    bool v4 = false;
  };
  std::vector<Network> networks_;
};

}  // namespace snowid::server
