// The keyed Feistel permutation behind opaque IDs (opaque_id.h).
//
// The state is (L, R) of l and r bits, l = floor(width/2), r = width - l,
// the value being (L << r) | R. Round i maps it to (R, L ^ F_i(R)), where
// F_i(R) is the first 8 bytes of AES-256(key, [i, l, R as 8 little-endian
// bytes, 0...]) keeping l bits; the halves swap widths each round. Each
// round is a bijection whatever F is (L = new R ^ F_i(new L)), so the whole
// is one, and kOpaqueRounds is even, so the widths end as (l, r) again and
// the output lies in [0, 2^width). Inverting runs the rounds backwards.
#include "snowid/opaque_id.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace snowid {
namespace {

constexpr std::size_t kBlock = 16;
// Values per cipher call: one AES block each per round.
constexpr std::size_t kChunk = 32;
constexpr std::string_view kKeyLabel = "snowid opaque-id v1";

std::uint64_t mask(unsigned bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

Error openssl_failure(std::string_view what) {
  return Error{ErrorCode::kUnavailable, fmt::format("OpenSSL could not {}", what)};
}

// Ends each thread's copies of the prepared ciphers with the thread.
struct ThreadCipher {
  std::uint64_t owner = 0;
  EVP_CIPHER_CTX* ctx = nullptr;
  ThreadCipher() = default;
  ThreadCipher(const ThreadCipher&) = delete;
  ThreadCipher& operator=(const ThreadCipher&) = delete;
  ~ThreadCipher() { EVP_CIPHER_CTX_free(ctx); }
};

std::atomic<std::uint64_t> next_instance{1};

}  // namespace

Result<std::unique_ptr<OpaqueIds>> OpaqueIds::create(std::string_view key, unsigned width) {
  if (width < 2 || width > kOpaqueIdWidth) {
    return invalid_argument(fmt::format("opaque ID width {} is outside 2..63", width));
  }
  if (key.size() < kMinOpaqueKeyBytes) {
    return invalid_argument(fmt::format("the key holds {} bytes; at least {} are required",
                                        key.size(), kMinOpaqueKeyBytes));
  }
  if (key.size() > kMaxOpaqueKeyBytes) {
    return invalid_argument(fmt::format("the key holds {} bytes; at most {} are allowed",
                                        key.size(), kMaxOpaqueKeyBytes));
  }
  // The AES key: SHA-256 of a label and the key bytes, so a key of any
  // length gives a full-strength AES-256 key tied to this one use.
  EVP_MD_CTX* digest = EVP_MD_CTX_new();
  std::array<unsigned char, 32> aes_key{};
  unsigned int aes_key_size = 0;
  const bool derived = digest != nullptr && EVP_DigestInit_ex(digest, EVP_sha256(), nullptr) == 1 &&
                       EVP_DigestUpdate(digest, kKeyLabel.data(), kKeyLabel.size()) == 1 &&
                       EVP_DigestUpdate(digest, "\0", 1) == 1 &&
                       EVP_DigestUpdate(digest, key.data(), key.size()) == 1 &&
                       EVP_DigestFinal_ex(digest, aes_key.data(), &aes_key_size) == 1 &&
                       aes_key_size == aes_key.size();
  EVP_MD_CTX_free(digest);
  if (!derived) {
    OPENSSL_cleanse(aes_key.data(), aes_key.size());
    return openssl_failure("derive the opaque ID key (SHA-256)");
  }
  EVP_CIPHER_CTX* prepared = EVP_CIPHER_CTX_new();
  const bool ready =
      prepared != nullptr &&
      EVP_EncryptInit_ex(prepared, EVP_aes_256_ecb(), nullptr, aes_key.data(), nullptr) == 1 &&
      EVP_CIPHER_CTX_set_padding(prepared, 0) == 1;
  OPENSSL_cleanse(aes_key.data(), aes_key.size());
  if (!ready) {
    EVP_CIPHER_CTX_free(prepared);
    return openssl_failure("prepare AES-256 for opaque IDs");
  }
  return std::unique_ptr<OpaqueIds>(new OpaqueIds(width, prepared));
}

Result<std::unique_ptr<OpaqueIds>> OpaqueIds::from_key_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return invalid_argument(fmt::format("{}: not a readable file", path));
  }
  std::ifstream in(path, std::ios::binary);
  std::string key;
  if (in) {
    // One byte more than allowed tells a too large file apart.
    key.resize(kMaxOpaqueKeyBytes + 1);
    in.read(key.data(), static_cast<std::streamsize>(key.size()));
    key.resize(static_cast<std::size_t>(in.gcount()));
  }
  if (!in && !in.eof()) {
    OPENSSL_cleanse(key.data(), key.size());
    return invalid_argument(fmt::format("{}: cannot read it", path));
  }
  if (!key.empty() && key.back() == '\n') key.pop_back();
  if (!key.empty() && key.back() == '\r') key.pop_back();
  auto created = create(key);
  OPENSSL_cleanse(key.data(), key.size());
  if (!created.ok()) {
    return Error{created.error().code, fmt::format("{}: {}", path, created.error().message)};
  }
  return created;
}

OpaqueIds::OpaqueIds(unsigned width, EVP_CIPHER_CTX* prepared)
    : width_(width), prepared_(prepared), instance_(next_instance.fetch_add(1)) {}

OpaqueIds::~OpaqueIds() { EVP_CIPHER_CTX_free(prepared_); }

EVP_CIPHER_CTX* OpaqueIds::thread_cipher() const {
  thread_local ThreadCipher cached;
  if (cached.owner != instance_) {
    if (cached.ctx == nullptr) cached.ctx = EVP_CIPHER_CTX_new();
    if (cached.ctx == nullptr || EVP_CIPHER_CTX_copy(cached.ctx, prepared_) != 1) {
      cached.owner = 0;
      return nullptr;
    }
    cached.owner = instance_;
  }
  return cached.ctx;
}

Result<Id> OpaqueIds::to_opaque(Id id) const { return map_one(id, false); }

Result<Id> OpaqueIds::from_opaque(Id opaque) const { return map_one(opaque, true); }

Result<Id> OpaqueIds::map_one(Id id, bool inverse) const {
  if (id < 0 || static_cast<std::uint64_t>(id) > mask(width_)) {
    return invalid_argument(
        fmt::format("{}ID {} is outside 0..2^{}-1", inverse ? "opaque " : "", id, width_));
  }
  std::uint64_t value = static_cast<std::uint64_t>(id);
  if (Status done = run(std::span(&value, 1), inverse); !done.ok()) return done.error();
  return static_cast<Id>(value);
}

Status OpaqueIds::permute(std::span<std::uint64_t> values) const { return run(values, false); }

Status OpaqueIds::invert(std::span<std::uint64_t> values) const { return run(values, true); }

Status OpaqueIds::run(std::span<std::uint64_t> values, bool inverse) const {
  EVP_CIPHER_CTX* cipher = thread_cipher();
  if (cipher == nullptr) return openssl_failure("copy the prepared AES-256 cipher");
  const unsigned left_bits = width_ / 2;
  const unsigned right_bits = width_ - left_bits;
  std::array<unsigned char, kChunk * kBlock> in{};
  std::array<unsigned char, kChunk * kBlock> out{};
  std::array<std::uint64_t, kChunk> left{};
  std::array<std::uint64_t, kChunk> right{};
  for (std::size_t start = 0; start < values.size(); start += kChunk) {
    const std::size_t n = std::min(kChunk, values.size() - start);
    for (std::size_t j = 0; j < n; ++j) {
      left[j] = values[start + j] >> right_bits;
      right[j] = values[start + j] & mask(right_bits);
    }
    // Before round i the halves are (l, r) bits for even i, (r, l) for odd.
    for (unsigned step = 0; step < kOpaqueRounds; ++step) {
      const unsigned round = inverse ? kOpaqueRounds - 1 - step : step;
      const unsigned out_bits = round % 2 == 0 ? left_bits : right_bits;
      // Forward, F reads R; backwards it reads the new L, which is that R.
      const std::array<std::uint64_t, kChunk>& read = inverse ? left : right;
      for (std::size_t j = 0; j < n; ++j) {
        unsigned char* block = in.data() + j * kBlock;
        block[0] = static_cast<unsigned char>(round);
        block[1] = static_cast<unsigned char>(out_bits);
        for (std::size_t b = 0; b < 8; ++b) {
          block[2 + b] = static_cast<unsigned char>(read[j] >> (8 * b));
        }
      }
      int written = 0;
      if (EVP_EncryptUpdate(cipher, out.data(), &written, in.data(),
                            static_cast<int>(n * kBlock)) != 1 ||
          written != static_cast<int>(n * kBlock)) {
        return openssl_failure("run AES-256 for opaque IDs");
      }
      for (std::size_t j = 0; j < n; ++j) {
        std::uint64_t f = 0;
        for (std::size_t b = 0; b < 8; ++b) {
          f |= static_cast<std::uint64_t>(out[j * kBlock + b]) << (8 * b);
        }
        f &= mask(out_bits);
        if (!inverse) {
          const std::uint64_t new_right = left[j] ^ f;  // (L, R) -> (R, L ^ F(R))
          left[j] = right[j];
          right[j] = new_right;
        } else {
          const std::uint64_t old_left = right[j] ^ f;  // (R, L ^ F(R)) -> (L, R)
          right[j] = left[j];
          left[j] = old_left;
        }
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      values[start + j] = (left[j] << right_bits) | right[j];
    }
  }
  return {};
}

}  // namespace snowid
