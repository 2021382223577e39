// Links snowid::client from the installed tree and asks a node that is not
// there for an ID: the client must answer with a bounded, clear error.
#include <cstdio>

#include "snowid/client.h"

int main() {
  snowid::ClientOptions options;
  options.endpoints = {"127.0.0.1:1"};  // nothing listens on port 1
  options.empty_wait = std::chrono::milliseconds{200};
  auto client = snowid::Client::open(options);
  if (!client.ok()) {
    std::printf("open failed: %s\n", client.error().message.c_str());
    return 1;
  }
  auto id = (*client)->next();
  if (id.ok()) {
    std::printf("unexpected ID %lld\n", static_cast<long long>(*id));
    return 1;
  }
  std::printf("unavailable: %s\n", id.error().message.c_str());
  return id.error().code == snowid::ErrorCode::kUnavailable ? 0 : 1;
}
