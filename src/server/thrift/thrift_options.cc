#include "thrift_options.h"

namespace snowid::server {

OptionRows<ThriftOptions> thrift_rows() {
  return lift(
      &ThriftOptions::listener,
      stream_listener_rows(StreamListenerOptionNames("thrift", "max_frame_bytes"), 16 << 20));
}

Status check_thrift_options(const ThriftOptions& options, bool tls_configured) {
  return check_stream_listener(options.listener,
                               StreamListenerOptionNames("thrift", "max_frame_bytes"),
                               tls_configured);
}

}  // namespace snowid::server
