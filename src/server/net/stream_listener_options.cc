#include "stream_listener_options.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>
#include <boost/asio/ip/address.hpp>

#include "endpoint_rows.h"
#include "trusted_networks.h"

namespace snowid::server {

namespace {

using Options = StreamListenerOptions;

}  // namespace

OptionRows<Options> stream_listener_rows(StreamListenerOptionNames listener_names,
                                         std::uint32_t max_pending_bytes_bound) {
  // Rows hold their names as pointers: the names stay here for good (a few
  // per listener kind; the option table is built once).
  static std::mutex kept_lock;
  static std::deque<StreamListenerOptionNames> kept;
  std::lock_guard lock(kept_lock);
  const StreamListenerOptionNames& names = kept.emplace_back(std::move(listener_names));
  // "" while the listener is on, else where its options would apply.
  const std::string endpoint_name = names.endpoint;
  OptionScope<Options> while_on = [endpoint_name](const Options& o) {
    return o.endpoint ? std::string() : endpoint_name + " = \"ADDR:PORT\"";
  };
  return {
      optional_endpoint_row(names.endpoint.c_str(), &Options::endpoint),
      {names.max_connections.c_str(), option::number(&Options::max_connections, 1'000'000),
       option::shown(&Options::max_connections), while_on},
      {names.idle_timeout.c_str(), option::duration(&Options::idle_timeout),
       option::shown(&Options::idle_timeout), while_on},
      {names.max_pending_bytes.c_str(),
       option::number(&Options::max_pending_bytes, max_pending_bytes_bound),
       option::shown(&Options::max_pending_bytes), while_on},
      {names.auth_timeout.c_str(), option::positive_duration(&Options::auth_timeout),
       option::shown(&Options::auth_timeout), while_on},
      {names.unauthenticated_share.c_str(), option::fraction(&Options::unauthenticated_share),
       [](const Options& o) { return fmt::format("{}", o.unauthenticated_share); }, while_on},
      {names.trusted_networks.c_str(),
       option::checked_text(&Options::trusted_networks,
                            [](std::string_view text) { return TrustedNetworks::parse(text); }),
       option::shown(&Options::trusted_networks), while_on},
      {names.tls.c_str(), option::boolean(&Options::tls), option::shown(&Options::tls), while_on},
  };
}

bool is_loopback(const std::string& host) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

Status check_stream_listener(const StreamListenerOptions& options,
                             const StreamListenerOptionNames& names, bool tls_configured) {
  if (!options.endpoint) return {};
  if (options.tls && !tls_configured) {
    return invalid_argument(fmt::format(
        "{} needs tls_cert and tls_key (the certificate HTTP and gRPC serve too)", names.tls));
  }
  if (options.max_connections < 1) {
    return invalid_argument(fmt::format("{} must be at least 1", names.max_connections));
  }
  if (options.max_pending_bytes < 64) {
    return invalid_argument(fmt::format("{} must be at least 64", names.max_pending_bytes));
  }
  if (options.unauthenticated_share <= 0) {
    return invalid_argument(fmt::format("{} must be above 0", names.unauthenticated_share));
  }
  return {};
}

std::int64_t unauthenticated_slots(const StreamListenerOptions& options,
                                   std::int64_t max_connections) {
  const auto share = static_cast<std::int64_t>(static_cast<double>(max_connections) *
                                               options.unauthenticated_share);
  return std::clamp<std::int64_t>(share, 1, std::max<std::int64_t>(1, max_connections));
}

}  // namespace snowid::server
