// Opaque IDs: a keyed, reversible permutation of the ID space that hides
// what a Snowflake ID shows (its time, node and how many IDs came before).
//
// OpaqueIds is a pseudorandom permutation, not encryption of secrets: each
// Snowflake ID maps to exactly one external ID and back, and without the key
// the external IDs look unrelated to one another. It is no authenticator (any
// number decodes to some Snowflake ID) and hides no more than the order,
// time and node bits: an external ID is as unique as the ID it stands for.
//
// Construction (docs/design.md, "Opaque IDs"): a Feistel network of
// kOpaqueRounds rounds over `width` bits split into halves of floor(width/2)
// and ceil(width/2) bits that swap sides each round, so any width from 2 to
// 63 is permuted exactly, without cycle-walking. Each round's function is
// AES-256 (OpenSSL EVP) of the round number, the output width and the other
// half, under a key derived from the key file with SHA-256.
//
// Thread-safety: after create(), all const methods may be called from any
// number of threads; each thread keeps its own copy of the prepared cipher,
// made on its first call, so that the hot path allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "snowid/decode.h"
#include "snowid/error.h"

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;  // NOLINT: OpenSSL's own spelling

namespace snowid {

// Fewer key bytes than this are refused: a key must be guessable by no one.
inline constexpr std::size_t kMinOpaqueKeyBytes = 16;
// A key file larger than this is refused as not a key.
inline constexpr std::size_t kMaxOpaqueKeyBytes = 4096;
// Feistel rounds; even, so that the halves end where they started.
inline constexpr unsigned kOpaqueRounds = 10;
// The width of Snowflake IDs: every value in [0, 2^63) is a positive int64.
inline constexpr unsigned kOpaqueIdWidth = 63;

class OpaqueIds {
 public:
  // A permutation of [0, 2^width) under `key` (its bytes as they are).
  // kInvalidArgument if the key has fewer than kMinOpaqueKeyBytes or more
  // than kMaxOpaqueKeyBytes bytes, or width is outside 2..63; kUnavailable
  // if OpenSSL fails. The error never contains key bytes.
  static Result<std::unique_ptr<OpaqueIds>> create(std::string_view key,
                                                   unsigned width = kOpaqueIdWidth);
  // create() with the contents of the file at `path`; one final newline
  // ("\n" or "\r\n") is not part of the key, so `openssl rand -hex 32 > F`
  // makes a key file. kInvalidArgument, naming the path (never the key), if
  // the file is missing, not a regular file, unreadable, or holds a key of
  // the wrong size.
  static Result<std::unique_ptr<OpaqueIds>> from_key_file(const std::string& path);

  ~OpaqueIds();
  OpaqueIds(const OpaqueIds&) = delete;
  OpaqueIds& operator=(const OpaqueIds&) = delete;

  unsigned width() const { return width_; }

  // The external ID of Snowflake ID `id`: in [0, 2^63), distinct for
  // distinct IDs. kInvalidArgument if id is negative (or, for a narrower
  // width, not below 2^width).
  Result<Id> to_opaque(Id id) const;
  // The Snowflake ID whose external ID is `opaque`; the same checks.
  Result<Id> from_opaque(Id opaque) const;

  // to_opaque()/from_opaque() of every value in place, a few dozen at a
  // time per cipher call. Requires: every value below 2^width. No
  // allocation after the calling thread's first call. kUnavailable only if
  // OpenSSL fails.
  Status permute(std::span<std::uint64_t> values) const;
  Status invert(std::span<std::uint64_t> values) const;

 private:
  OpaqueIds(unsigned width, EVP_CIPHER_CTX* prepared);
  Status run(std::span<std::uint64_t> values, bool inverse) const;
  Result<Id> map_one(Id id, bool inverse) const;
  // The calling thread's copy of prepared_; null if OpenSSL fails.
  EVP_CIPHER_CTX* thread_cipher() const;

  unsigned width_;
  EVP_CIPHER_CTX* prepared_;  // AES-256-ECB, key set, no padding; never used to encrypt
  std::uint64_t instance_;    // unique per object, never reused: names thread copies
};

}  // namespace snowid
