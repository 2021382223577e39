#include "thrift_options.h"

namespace snowid::server {

OptionRows<ThriftOptions> thrift_rows() {
  OptionRows<ThriftOptions> rows =
      lift(&ThriftOptions::listener, stream_listener_rows(kThriftOptionNames, 16 << 20));
  rows.push_back({"thrift_insecure", option::boolean(&ThriftOptions::insecure),
                  option::shown(&ThriftOptions::insecure), [](const ThriftOptions& o) {
                    return o.listener.endpoint ? std::string() : "thrift = \"ADDR:PORT\"";
                  }});
  return rows;
}

Status check_thrift_options(const ThriftOptions& options, bool token_set) {
  if (Status s = check_stream_listener(options.listener, kThriftOptionNames); !s.ok()) return s;
  const auto& endpoint = options.listener.endpoint;
  if (endpoint && token_set && !options.insecure && !is_loopback(endpoint->host)) {
    return invalid_argument(fmt::format(
        "thrift {}: Twitter's Thrift protocol carries no bearer token, so Thrift callers would "
        "not be checked: serve Thrift on a loopback address, or set thrift_insecure = true to "
        "accept unauthenticated Thrift callers",
        endpoint->text()));
  }
  return {};
}

}  // namespace snowid::server
