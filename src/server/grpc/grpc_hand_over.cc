#include "grpc_hand_over.h"

#include <grpcpp/server_posix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text_file.h"

namespace snowid::server {

bool GrpcHandOver::hand_over(grpc::Server& server, int fd) {
  sweep();
  struct stat st {};
  if (handed_.size() >= max_ || ::fstat(fd, &st) != 0) {
    ::close(fd);
    return false;
  }
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  handed_.emplace_back(fd, st.st_ino);
  grpc::AddInsecureChannelFromFd(&server, fd);
  return true;
}

std::size_t GrpcHandOver::sweep() {
  std::erase_if(handed_, [](const std::pair<int, ino_t>& h) {
    struct stat st {};
    return ::fstat(h.first, &st) != 0 || st.st_ino != h.second || !S_ISSOCK(st.st_mode);
  });
  return handed_.size();
}

Result<std::shared_ptr<grpc::ServerCredentials>> grpc_tls_credentials(const NetOptions& net) {
  auto cert = read_text_file(net.tls_cert, "tls_cert");
  if (!cert.ok()) return cert.error();
  auto key = read_text_file(net.tls_key, "tls_key");
  if (!key.ok()) return key.error();
  grpc::SslServerCredentialsOptions options;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  pair.cert_chain = std::move(*cert);
  pair.private_key = std::move(*key);
  options.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(options);
}

}  // namespace snowid::server
