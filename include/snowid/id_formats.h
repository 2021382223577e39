// Other ID formats with the Snowflake generator's clock safety: UUIDv7
// (RFC 9562), ULID (github.com/ulid/spec) and MongoDB's ObjectId; and the
// decoding of any of these, any UUID and a Snowflake ID, told apart by shape.
//
// Every formatted ID is made from one Snowflake ID that the node's Generator
// issues (generator.h): its time unit gives the ID's timestamp, and the bits
// below the timestamp (node id and sequence) give a counter. The generator's
// uniqueness invariant (every issued (time unit, sequence) pair is strictly
// greater than every earlier one, also across restarts through the state
// file's high-water mark, under the configured clock policy) therefore
// carries over: there is one timestamp source, one clock policy and one
// persisted mark for every format. See FormattedIdSource for the layout of
// each format and why the order holds.
//
// Thread-safety: FormattedIdSource may be called from any number of threads;
// the free functions are pure and thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <compare>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "snowid/decode.h"
#include "snowid/error.h"
#include "snowid/generator.h"
#include "snowid/layout.h"

namespace snowid {

enum class IdKind : std::uint8_t { kUuid7, kUlid, kObjectId };

const char* id_kind_name(IdKind kind);  // "uuid7", "ulid", "objectid"
Result<IdKind> parse_id_kind(std::string_view name);

// A UUID or ULID (16 bytes) or an ObjectId (12 bytes; the last 4 are 0), in
// network byte order: comparing `bytes` compares the IDs as they sort.
struct FormattedId {
  IdKind kind = IdKind::kUuid7;
  std::array<std::uint8_t, 16> bytes{};

  std::size_t size() const { return kind == IdKind::kObjectId ? 12 : 16; }
  std::span<const std::uint8_t> binary() const { return {bytes.data(), size()}; }
  friend auto operator<=>(const FormattedId&, const FormattedId&) = default;
};

// The canonical text: a UUID as 36 lowercase characters (8-4-4-4-12), a
// ULID as 26 uppercase Crockford base32 characters, an ObjectId as 24
// lowercase hex digits. Each text sorts as its bytes do.
std::string to_text(const FormattedId& id);

// Issues formatted IDs, each from one ID of `generator`:
//
//   UUIDv7    unix_ts_ms (48) | ver 7 (4) | rand_a (12) | var 0b10 (2) | rand_b (62)
//             rand_a|rand_b (74 bits) = counter (c bits) | random (74 - c bits):
//             RFC 9562 section 6.2 method 1, a fixed-length counter in the
//             most significant random bits.
//   ULID      timestamp ms (48) | counter (c bits) | random (80 - c bits).
//   ObjectId  seconds (32) | per-source random (40) | counter (24), the
//             counter = a random start + the ID's position in its second
//             ((ms % 1000) / time unit, then sequence): it starts at a
//             random value and increases through the second without wrapping.
//
// c = the bits of the layout below the timestamp (node id and sequence,
// 22 under the Twitter layout), the ms is the start of the Snowflake ID's
// time unit. So within a node the order of (ms, counter) is the order of
// the Snowflake IDs, which strictly increases; the random bits below never
// decide an order. IDs of different nodes differ in their counter's node
// bits. The random bits come from getrandom(2), the OS CSPRNG.
//
// A ULID's randomness is thus not incremented within a millisecond as the
// ulid spec's monotonic generator does: the counter above it increases
// instead, which cannot overflow (when a time unit's sequence numbers run
// out, the generator moves to the next unit or refuses under its policy).
//
// ObjectIds across a restart: the per-source random of a new process may
// sort below the old one's, so ObjectIds are issued in a second after the
// floor the generator started above (its state file's mark, or
// start_above; Generator::next_block_at_or_after): the first ObjectIds of a
// process lie in a later second than any ObjectId of an earlier process.
// Under the monotonic policy the node runs ahead to that second (at most
// about reserve_ahead plus one second, within max_drift); under reject and
// wait, ObjectIds are refused (kClockBehind, "ObjectIds resume at …") until
// the clock is there, or waited for within max_wait.
// ObjectId needs a layout whose time units of one second and their sequence
// numbers fit the 24-bit counter (any layout with at most 14 sequence bits
// at 1 ms); otherwise kInvalidArgument.
//
// Use one source per generator: two sources draw two per-source randoms, and
// their ObjectIds of one second would not be ordered.
class FormattedIdSource {
 public:
  // Requires: `generator` outlives the source. kInvalidArgument if the
  // layout leaves fewer than 26 random bits in a UUIDv7 (a layout with more
  // than 48 bits below the timestamp).
  static Result<std::unique_ptr<FormattedIdSource>> create(Generator& generator);

  // One ID of `kind`; the generator's refusals are passed on as they are.
  Result<FormattedId> next(IdKind kind);
  // Fills `out` with strictly increasing IDs of `kind`. On error, `out` may
  // be partly filled and those IDs are consumed.
  Status next(IdKind kind, std::span<FormattedId> out);

  Generator& generator() const { return generator_; }

  // The 5 bytes every ObjectId of this source carries, as a number.
  std::uint64_t object_id_process_random() const { return process_random_; }

 private:
  FormattedIdSource(Generator& generator, const Layout& layout);
  // A block of Snowflake IDs for `kind`: for ObjectIds, above the floor.
  Result<IdBlock> take(IdKind kind, std::uint32_t want);
  Result<FormattedId> format(IdKind kind, Id snowflake) const;

  Generator& generator_;
  Layout layout_;
  int counter_bits_ = 0;                 // bits below the timestamp
  std::int64_t object_id_floor_s_ = -1;  // ObjectIds need a second above this
  std::uint64_t process_random_ = 0;     // 40 bits
  std::uint32_t counter_start_ = 0;      // ObjectId counter's random start
  bool object_ids_fit_ = false;          // the layout's second fits the counter
};

// What a text decodes to (decode_text).
struct DecodedUuid {
  std::string text;     // canonical: lowercase 8-4-4-4-12
  int version = 0;      // bits 48-51
  std::string variant;  // "ncs", "rfc9562", "microsoft" or "future"
  // Versions 1, 6 (Gregorian 100 ns ticks) and 7 (Unix ms): the time; nullopt for others.
  std::optional<std::chrono::sys_time<std::chrono::milliseconds>> time;
};
struct DecodedUlid {
  std::string text;  // canonical: uppercase
  std::chrono::sys_time<std::chrono::milliseconds> time;
  std::array<std::uint8_t, 10> randomness{};
};
struct DecodedObjectId {
  std::string text;  // canonical: lowercase
  std::chrono::sys_seconds time;
  std::uint64_t process_random = 0;  // 40 bits
  std::uint32_t counter = 0;         // 24 bits
};
struct DecodedSnowflake {
  Id id = 0;
  IdFields fields;
};
using DecodedId = std::variant<DecodedSnowflake, DecodedUuid, DecodedUlid, DecodedObjectId>;

// Decodes `text` by its shape, unambiguously by length:
//   36 characters 8-4-4-4-12 hex, or 32 hex digits  -> a UUID of any version
//   26 Crockford base32 characters (any case)       -> a ULID
//   24 hex digits                                   -> an ObjectId
//   anything else                                   -> a decimal Snowflake ID under `layout`
// kInvalidArgument otherwise: parse_id's reason, then the other shapes expected.
// Requires: validate(layout).ok().
Result<DecodedId> decode_text(std::string_view text, const Layout& layout);

}  // namespace snowid
