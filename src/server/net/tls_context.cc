#include "tls_context.h"

#include <fmt/format.h>

namespace snowid::server {

namespace ssl = boost::asio::ssl;

Result<std::unique_ptr<ssl::context>> load_tls(const NetOptions& options) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  // A client may not renegotiate (TLS 1.2): each renegotiation would cost
  // the listener a handshake's work for no request.
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_RENEGOTIATION);
  boost::system::error_code ec;
  context->use_certificate_chain_file(options.tls_cert, ec);
  if (ec) {
    return invalid_argument(fmt::format("tls_cert {}: cannot load certificate: {}",
                                        options.tls_cert, ec.message()));
  }
  context->use_private_key_file(options.tls_key, ssl::context::pem, ec);
  if (ec) {
    return invalid_argument(
        fmt::format("tls_key {}: cannot load private key: {}", options.tls_key, ec.message()));
  }
  return context;
}

}  // namespace snowid::server
