// The option rows of a listener's address: ADDR:PORT, or "off" where the
// listener may be turned off (gRPC, Thrift, RESP).
#pragma once

#include <optional>
#include <string>

#include "endpoint.h"
#include "option_rows.h"

namespace snowid::server {

// The row of an ADDR:PORT option named `name` for the field `field`.
template <typename Config>
OptionRow<Config> endpoint_row(const char* name, Endpoint Config::*field) {
  return {name,
          [field](Config& c, const std::string& v) -> Status {
            auto e = parse_endpoint(v);
            if (!e.ok()) return e.error();
            c.*field = *e;
            return {};
          },
          [field](const Config& c) { return (c.*field).text(); },
          {}};
}

// The row of a listener's address that may be "off" (nullopt: the listener
// is off) or ADDR:PORT; its default is the field's.
template <typename Config>
OptionRow<Config> optional_endpoint_row(const char* name, std::optional<Endpoint> Config::*field) {
  return {name,
          [field](Config& c, const std::string& v) -> Status {
            if (v == "off") {
              c.*field = std::nullopt;
              return {};
            }
            auto e = parse_endpoint(v);
            if (!e.ok()) return e.error();
            c.*field = *e;
            return {};
          },
          [field](const Config& c) { return c.*field ? (c.*field)->text() : std::string("off"); },
          {}};
}

}  // namespace snowid::server
