// The network options every listener of snowidd shares: its I/O threads, the
// read and idle timeouts, and TLS (tls_cert, tls_key), with their rows in
// the option table. Each protocol's own options sit in its folder.
#pragma once

#include <chrono>
#include <string>

#include "option_rows.h"
#include "snowid/error.h"

namespace snowid::server {

struct NetOptions {
  int io_threads = 2;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds idle_timeout{60000};
  std::string tls_cert;
  std::string tls_key;
};

// Rows in table order: io_threads; later read_timeout_ms ... tls_key.
OptionRows<NetOptions> net_thread_rows();
OptionRows<NetOptions> net_timeout_rows();

// tls_cert and tls_key given together and readable, at least one I/O thread.
Status check_net_options(const NetOptions& options);

}  // namespace snowid::server
