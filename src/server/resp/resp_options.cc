#include "resp_options.h"

namespace snowid::server {

OptionRows<RespOptions> resp_rows() {
  OptionRows<RespOptions> rows =
      lift(&RespOptions::listener,
           stream_listener_rows(StreamListenerOptionNames("resp", "max_pending_bytes"), 1 << 30));
  const OptionScope<RespOptions> while_on = [](const RespOptions& o) {
    return o.listener.endpoint ? std::string() : "resp = \"ADDR:PORT\"";
  };
  rows.push_back({"resp_max_bulk_bytes",
                  option::number(&RespOptions::max_bulk_bytes, std::uint32_t{512} << 20),
                  option::shown(&RespOptions::max_bulk_bytes), while_on});
  rows.push_back({"resp_max_arguments",
                  option::number(&RespOptions::max_arguments, std::uint32_t{1} << 20),
                  option::shown(&RespOptions::max_arguments), while_on});
  rows.push_back({"resp_max_queued_commands",
                  option::number(&RespOptions::max_queued_commands, std::uint32_t{1} << 24),
                  option::shown(&RespOptions::max_queued_commands), while_on});
  rows.push_back({"resp_max_queued_bytes",
                  option::number(&RespOptions::max_queued_bytes, std::uint64_t{1} << 40),
                  option::shown(&RespOptions::max_queued_bytes), while_on});
  return rows;
}

Status check_resp_options(const RespOptions& options, bool tls_configured) {
  if (Status s = check_stream_listener(options.listener,
                                       StreamListenerOptionNames("resp", "max_pending_bytes"),
                               tls_configured);
      !s.ok())
    return s;
  if (!options.listener.endpoint) return {};
  if (options.max_arguments < 8) {
    // HELLO 3 AUTH user password SETNAME name: what clients send at connect.
    return invalid_argument("resp_max_arguments must be at least 8");
  }
  if (options.max_queued_commands < 1)
    return invalid_argument("resp_max_queued_commands must be at least 1");
  if (options.max_queued_bytes < 1024)
    return invalid_argument("resp_max_queued_bytes must be at least 1024");
  if (options.max_bulk_bytes < 256)
    return invalid_argument("resp_max_bulk_bytes must be at least 256");
  if (options.max_bulk_bytes > options.listener.max_pending_bytes - 64) {
    // A bulk arrives with its $<len> line and CRLF: it must fit with them.
    return invalid_argument(
        "resp_max_bulk_bytes must be at least 64 bytes below resp_max_pending_bytes");
  }
  return {};
}

}  // namespace snowid::server
