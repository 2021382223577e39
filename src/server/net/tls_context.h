// The TLS context of snowidd's listeners (tls_cert, tls_key), shared by
// the HTTP listener and the claim-time responder, so both offer the same
// certificate and the same protocol floor (TLS 1.2).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "net_options.h"
#include "snowid/error.h"

namespace snowid::server {

// kInvalidArgument naming the file that cannot be loaded.
Result<std::unique_ptr<boost::asio::ssl::context>> load_tls(const NetOptions& options);

}  // namespace snowid::server
