// The TLS context of snowidd's listeners (tls_cert, tls_key), shared by
// the HTTP listener, the claim-time responder and the stream listeners
// (resp_tls, thrift_tls), so all offer the same certificate and the same
// protocol floor (TLS 1.2, no renegotiation).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>

#include "net_options.h"
#include "snowid/error.h"

namespace snowid::server {

// kInvalidArgument naming the file that cannot be loaded.
Result<std::unique_ptr<boost::asio::ssl::context>> load_tls(const NetOptions& options);

}  // namespace snowid::server
