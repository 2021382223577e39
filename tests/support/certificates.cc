#include "certificates.h"

#include <stdexcept>

#include "subprocess.h"

namespace snowid::test {

CertificateFiles make_self_signed_certificate(const std::string& dir, const std::string& name,
                                              const std::string& common_name) {
  CertificateFiles files{dir + "/" + name + ".pem", dir + "/" + name + "-key.pem"};
  const auto made = run_process(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
       "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=" + common_name,
       "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", files.key, "-out",
       files.cert});
  if (made.exit_code != 0) throw std::runtime_error("openssl req failed: " + made.err);
  return files;
}

}  // namespace snowid::test
