// Self-signed certificates made by a test with the openssl command (EC P-256,
// valid one day). A self-signed certificate is its own CA: give it to the
// other side as the trusted root.
#pragma once

#include <string>

namespace snowid::test {

struct CertificateFiles {
  std::string cert;  // PEM certificate, also usable as the CA file
  std::string key;   // PEM private key
};

// Writes <dir>/<name>.pem and <dir>/<name>-key.pem for subject CN=`common_name`
// with subjectAltName IP:127.0.0.1 and DNS:localhost. Throws std::runtime_error
// with openssl's message if it fails.
CertificateFiles make_self_signed_certificate(const std::string& dir, const std::string& name,
                                              const std::string& common_name = "localhost");

}  // namespace snowid::test
