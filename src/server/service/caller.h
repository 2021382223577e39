// Who is asking: a request's principal, as its protocol established it.
// Each protocol declares how its callers are authenticated and says so here:
// HTTP and gRPC callers present an "Authorization" header (or metadata) with
// every request; a RESP or Thrift connection is trusted once it has
// authenticated (AUTH, authenticate) or because it comes from a trusted
// network. IdService::authorize() admits a trusted caller without a token
// and checks a presenting caller's header against the bearer token.
//
// A value type; a presenting Caller views its header, which must outlive it.
#pragma once

#include <optional>
#include <string_view>

namespace snowid::server {

class Caller {
 public:
  // A caller its protocol has already authenticated (a connection that
  // passed AUTH or authenticate, or one from a trusted network).
  static Caller trusted() { return Caller(true, std::nullopt); }
  // A caller presenting `authorization` ("Bearer <token>"); nullopt: none.
  static Caller presenting(std::optional<std::string_view> authorization) {
    return Caller(false, authorization);
  }

  bool is_trusted() const { return trusted_; }
  // The header presented; nullopt for a trusted caller or none presented.
  std::optional<std::string_view> authorization() const { return authorization_; }

 private:
  Caller(bool trusted, std::optional<std::string_view> authorization)
      : trusted_(trusted), authorization_(authorization) {}

  bool trusted_ = false;
  std::optional<std::string_view> authorization_;
};

}  // namespace snowid::server
