// A listener's address, HOST:PORT, as the configuration gives it.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "snowid/decode.h"
#include "snowid/error.h"

namespace snowid {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  // HOST:PORT, an IPv6 host in brackets.
  std::string text() const {
    return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                               : fmt::format("{}:{}", host, port);
  }
};

// "HOST:PORT" or "[IPV6]:PORT"; kInvalidArgument naming the text otherwise.
inline Result<Endpoint> parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return invalid_argument(fmt::format("'{}' is not ADDR:PORT", text));
  }
  auto port = parse_unsigned(text.substr(colon + 1), 65535, "port");
  if (!port.ok()) return port.error();
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return Endpoint{host, static_cast<std::uint16_t>(*port)};
}

}  // namespace snowid
