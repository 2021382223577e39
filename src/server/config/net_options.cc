#include "net_options.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

namespace snowid::server {

using option::shown;

OptionRows<NetOptions> net_thread_rows() {
  using N = NetOptions;
  return {{"io_threads", option::number(&N::io_threads, 256), shown(&N::io_threads), {}}};
}

OptionRows<NetOptions> net_timeout_rows() {
  using N = NetOptions;
  return {
      {"read_timeout_ms", option::duration(&N::read_timeout), shown(&N::read_timeout), {}},
      {"idle_timeout_ms", option::duration(&N::idle_timeout), shown(&N::idle_timeout), {}},
      {"tls_cert", option::text(&N::tls_cert), shown(&N::tls_cert), {}},
      {"tls_key", option::text(&N::tls_key), shown(&N::tls_key), {}},
  };
}

Status check_net_options(const NetOptions& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return invalid_argument("tls_cert and tls_key must be given together (or neither)");
  }
  for (const std::string* file : {&options.tls_cert, &options.tls_key}) {
    std::error_code ec;
    if (!file->empty() && !std::filesystem::is_regular_file(*file, ec)) {
      return invalid_argument(
          fmt::format("{} {} is not a readable file",
                      file == &options.tls_cert ? "tls_cert" : "tls_key", *file));
    }
  }
  if (options.io_threads < 1) return invalid_argument("io_threads must be at least 1");
  return {};
}

}  // namespace snowid::server
