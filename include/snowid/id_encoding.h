// Short text forms of a Snowflake (or opaque) ID, a value in [0, 2^63).
//
//   decimal  1 to 19 digits, no padding (the default form everywhere)
//   hex      16 characters 0-9a-f (A-F read too)
//   base32   13 characters of Crockford's alphabet 0-9A-Z without I L O U
//            (read in either case; I and L read as 1, O as 0)
//   base58   11 characters of Bitcoin's alphabet 1-9A-Za-z without 0 O I l
//   base62   11 characters 0-9A-Za-z
//
// Every form but decimal is left-padded to its fixed width with the
// alphabet's zero, and every alphabet is in ASCII order, so for these forms
// comparing the texts bytewise (strcmp, ORDER BY on a binary column) orders
// them as the numbers: fixed-width text sorts as its value does. Decimal
// text does not ("9" > "10").
//
// Pure functions: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "snowid/decode.h"
#include "snowid/error.h"

namespace snowid {

enum class IdEncoding : std::uint8_t { kDecimal, kHex, kBase32, kBase58, kBase62 };

// "decimal", "hex", "base32", "base58", "base62".
std::string_view id_encoding_name(IdEncoding encoding);
// The encoding named so; kInvalidArgument listing the names otherwise.
Result<IdEncoding> parse_id_encoding(std::string_view name);

// The fixed length of the encoding's text; 0 for decimal, whose length varies.
std::size_t encoded_id_width(IdEncoding encoding);
// The longest text any encoding writes (decimal's 19 digits).
inline constexpr std::size_t kMaxEncodedIdLength = 19;

// Writes `id`'s text to `out` (room for kMaxEncodedIdLength characters) and
// returns its length. Requires: id >= 0.
std::size_t encode_id(Id id, IdEncoding encoding, char* out);
std::string encode_id(Id id, IdEncoding encoding);

// The ID `text` spells in `encoding`. kInvalidArgument, saying why, for a
// text of the wrong length, a character outside the alphabet, or a value
// above 2^63-1.
Result<Id> decode_id(std::string_view text, IdEncoding encoding);

}  // namespace snowid
