// Who is asking: a request's principal, as its protocol established it.
// Each protocol declares how its callers are authenticated and says so here:
// HTTP and gRPC callers present an "Authorization" header (or metadata) with
// every request; a RESP or Thrift connection authenticates once (AUTH,
// authenticate) and then holds a TokenProof of the token it presented, or is
// trusted because it comes from a trusted network. IdService::authorize()
// admits a trusted caller without a token, and checks a presenting caller's
// header, or a connection's proof, against the tokens in force at that
// request (access_tokens.h).
//
// A value type; a Caller views its header or proof, which must outlive it.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace snowid::server {

// SHA-256 of a token.
using TokenDigest = std::array<unsigned char, 32>;

// What a connection that authenticated keeps of its token: the token's name
// and the digest of what it presented (never the token itself).
struct TokenProof {
  std::string name;
  TokenDigest digest{};
};

class Caller {
 public:
  // A caller its protocol trusts without a token (a connection from a
  // trusted network).
  static Caller trusted() { return Caller(true, std::nullopt, nullptr); }
  // A caller presenting `authorization` ("Bearer <token>"); nullopt: none.
  static Caller presenting(std::optional<std::string_view> authorization) {
    return Caller(false, authorization, nullptr);
  }
  // A connection that authenticated with the token `proof` names.
  static Caller proven(const TokenProof& proof) { return Caller(false, std::nullopt, &proof); }

  bool is_trusted() const { return trusted_; }
  // The header presented; nullopt for a trusted or proven caller or none presented.
  std::optional<std::string_view> authorization() const { return authorization_; }
  // The proof of a connection that authenticated; null otherwise.
  const TokenProof* proof() const { return proof_; }

 private:
  Caller(bool trusted, std::optional<std::string_view> authorization, const TokenProof* proof)
      : trusted_(trusted), authorization_(authorization), proof_(proof) {}

  bool trusted_ = false;
  std::optional<std::string_view> authorization_;
  const TokenProof* proof_ = nullptr;
};

}  // namespace snowid::server
