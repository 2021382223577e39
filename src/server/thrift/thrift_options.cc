#include "thrift_options.h"

namespace snowid::server {

namespace {

const StreamListenerOptionNames& option_names() {
  static const StreamListenerOptionNames names("thrift", "max_frame_bytes");
  return names;
}

}  // namespace

OptionRows<ThriftOptions> thrift_rows() {
  return lift(&ThriftOptions::listener, stream_listener_rows(option_names(), 16 << 20));
}

Status check_thrift_options(const ThriftOptions& options) {
  return check_stream_listener(options.listener, option_names());
}

}  // namespace snowid::server
