// Fixed-width positional encodings of IDs (id_encoding.h). Each alphabet
// lists its digits in ASCII order, so that padded texts sort as their values.
#include "snowid/id_encoding.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <limits>

#include "input_text.h"

namespace snowid {
namespace {

using internal::shown;

struct Alphabet {
  std::string_view digits;  // in ASCII order: digits[i] < digits[i + 1]
  std::size_t width;        // enough digits for 2^63 - 1
  bool any_case;            // lower and upper case letters read alike
};

constexpr Alphabet kHex{"0123456789abcdef", 16, true};
constexpr Alphabet kBase32{"0123456789ABCDEFGHJKMNPQRSTVWXYZ", 13, true};
constexpr Alphabet kBase58{"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", 11, false};
constexpr Alphabet kBase62{"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 11,
                           false};

const Alphabet& alphabet_of(IdEncoding encoding) {
  switch (encoding) {
    case IdEncoding::kHex:
      return kHex;
    case IdEncoding::kBase32:
      return kBase32;
    case IdEncoding::kBase58:
      return kBase58;
    default:
      return kBase62;
  }
}

constexpr std::array<IdEncoding, 5> kEncodings{IdEncoding::kDecimal, IdEncoding::kHex,
                                               IdEncoding::kBase32, IdEncoding::kBase58,
                                               IdEncoding::kBase62};

// The digit `c` stands for in `alphabet`, or -1.
int digit_of(const Alphabet& alphabet, IdEncoding encoding, char c) {
  if (alphabet.any_case) {
    const bool hex = encoding == IdEncoding::kHex;
    if (hex && c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!hex && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (encoding == IdEncoding::kBase32) {
      if (c == 'I' || c == 'L') c = '1';  // Crockford: read as one and zero
      if (c == 'O') c = '0';
    }
  }
  const std::size_t at = alphabet.digits.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

}  // namespace

std::string_view id_encoding_name(IdEncoding encoding) {
  switch (encoding) {
    case IdEncoding::kDecimal:
      return "decimal";
    case IdEncoding::kHex:
      return "hex";
    case IdEncoding::kBase32:
      return "base32";
    case IdEncoding::kBase58:
      return "base58";
    case IdEncoding::kBase62:
      return "base62";
  }
  return "decimal";
}

Result<IdEncoding> parse_id_encoding(std::string_view name) {
  for (IdEncoding encoding : kEncodings) {
    if (name == id_encoding_name(encoding)) return encoding;
  }
  return invalid_argument(fmt::format(
      "unknown encoding '{}'; expected decimal, hex, base32, base58 or base62", shown(name)));
}

std::size_t encoded_id_width(IdEncoding encoding) {
  return encoding == IdEncoding::kDecimal ? 0 : alphabet_of(encoding).width;
}

std::size_t encode_id(Id id, IdEncoding encoding, char* out) {
  if (encoding == IdEncoding::kDecimal) {
    auto [end, ec] = std::to_chars(out, out + kMaxEncodedIdLength, id);
    (void)ec;  // 19 digits hold any int64 >= 0
    return static_cast<std::size_t>(end - out);
  }
  const Alphabet& alphabet = alphabet_of(encoding);
  const std::uint64_t base = alphabet.digits.size();
  auto value = static_cast<std::uint64_t>(id);
  for (std::size_t i = alphabet.width; i-- > 0;) {
    out[i] = alphabet.digits[value % base];
    value /= base;
  }
  return alphabet.width;
}

std::string encode_id(Id id, IdEncoding encoding) {
  std::array<char, kMaxEncodedIdLength> text{};
  return std::string(text.data(), encode_id(id, encoding, text.data()));
}

Result<Id> decode_id(std::string_view text, IdEncoding encoding) {
  if (encoding == IdEncoding::kDecimal) return parse_id(text);
  const Alphabet& alphabet = alphabet_of(encoding);
  const std::string_view name = id_encoding_name(encoding);
  if (text.size() != alphabet.width) {
    return invalid_argument(fmt::format("{} ID '{}' has {} characters; expected {}", name,
                                        shown(text), text.size(), alphabet.width));
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<Id>::max());
  const std::uint64_t base = alphabet.digits.size();
  std::uint64_t value = 0;
  for (char c : text) {
    const int digit = digit_of(alphabet, encoding, c);
    if (digit < 0) {
      return invalid_argument(fmt::format("{} ID '{}' holds '{}', which is not a {} digit", name,
                                          shown(text), shown(std::string_view(&c, 1)), name));
    }
    if (value > (kMax - static_cast<std::uint64_t>(digit)) / base) {
      return invalid_argument(fmt::format("{} ID '{}' exceeds 2^63-1", name, shown(text)));
    }
    value = value * base + static_cast<std::uint64_t>(digit);
  }
  return static_cast<Id>(value);
}

}  // namespace snowid
