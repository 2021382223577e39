// UUIDv7, ULID and ObjectId from Snowflake IDs, and decoding by shape.
//
// THE ORDER INVARIANT (id_formats.h). A formatted ID is a pure function of
// one Snowflake ID s plus random bits that lie below every bit that depends
// on s. Within one node, the bits that depend on s are (start of s's time
// unit, bits of s below its timestamp) for UUIDv7 and ULID, and (second of
// that start, the source's fixed random, position of s within its second)
// for ObjectId; each is strictly increasing in s. The generator issues
// strictly increasing s, so the formatted IDs strictly increase in the order
// they are issued, and never repeat, for as long as the generator's own
// invariants hold (clock policy, state file, restarts).
#include "snowid/id_formats.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "bit_fields.h"
#include "input_text.h"
#include "time_text.h"

namespace snowid {

using std::chrono::milliseconds;

namespace {

constexpr int kUuidRandomBits = 74;     // rand_a (12) + rand_b (62)
constexpr int kMinUuidRandomBits = 26;  // what a counter must leave free
constexpr int kObjectIdCounterBits = 24;
constexpr std::string_view kCrockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr std::string_view kLowerHexDigits = "0123456789abcdef";

// Fills `out` from getrandom(2), through a per-thread buffer so that most
// calls make no system call. Aborts the process if the kernel's CSPRNG
// fails, which it does not once initialised: an ID is never made from
// weaker randomness.
void random_bytes(std::span<std::uint8_t> out) {
  thread_local std::array<std::uint8_t, 256> buffer;
  thread_local std::size_t used = buffer.size();
  std::size_t done = 0;
  while (done < out.size()) {
    if (used == buffer.size()) {
      std::size_t filled = 0;
      while (filled < buffer.size()) {
        const ssize_t got = ::getrandom(buffer.data() + filled, buffer.size() - filled, 0);
        if (got < 0) {
          if (errno == EINTR) continue;
          std::fprintf(stderr, "snowid: getrandom failed: %s\n", std::strerror(errno));
          std::abort();
        }
        filled += static_cast<std::size_t>(got);
      }
      used = 0;
    }
    const std::size_t take = std::min(out.size() - done, buffer.size() - used);
    std::memcpy(out.data() + done, buffer.data() + used, take);
    used += take;
    done += take;
  }
}

std::uint64_t random_u64() {
  std::array<std::uint8_t, 8> bytes;
  random_bytes(bytes);
  std::uint64_t value = 0;
  for (std::uint8_t b : bytes) value = (value << 8) | b;
  return value;
}

// Writes the low `count` bits of `value` at bit `offset` of `bytes`, most
// significant bit first (bit 0 is the top bit of bytes[0]). count <= 64.
void put_bits(std::span<std::uint8_t> bytes, int offset, int count, std::uint64_t value) {
  for (int i = 0; i < count; ++i) {
    const int bit = offset + i;
    const auto mask = static_cast<std::uint8_t>(0x80u >> (bit % 8));
    if ((value >> (count - 1 - i)) & 1u) {
      bytes[static_cast<std::size_t>(bit / 8)] |= mask;
    } else {
      bytes[static_cast<std::size_t>(bit / 8)] &= static_cast<std::uint8_t>(~mask);
    }
  }
}

std::uint64_t get_bits(std::span<const std::uint8_t> bytes, int offset, int count) {
  std::uint64_t value = 0;
  for (int i = 0; i < count; ++i) {
    const int bit = offset + i;
    value = (value << 1) | ((bytes[static_cast<std::size_t>(bit / 8)] >> (7 - bit % 8)) & 1u);
  }
  return value;
}

std::string hex(std::span<const std::uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out += kLowerHexDigits[b >> 4];
    out += kLowerHexDigits[b & 0xF];
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses 2 * out.size() hex digits; false if one is not a hex digit.
bool parse_hex(std::string_view text, std::span<std::uint8_t> out) {
  if (text.size() != out.size() * 2) return false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const int high = hex_value(text[2 * i]);
    const int low = hex_value(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<std::uint8_t>(high * 16 + low);
  }
  return true;
}

int crockford_value(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  const auto at = kCrockford.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}

std::string uuid_text(std::span<const std::uint8_t> bytes) {
  const std::string digits = hex(bytes);
  return fmt::format("{}-{}-{}-{}-{}", digits.substr(0, 8), digits.substr(8, 4),
                     digits.substr(12, 4), digits.substr(16, 4), digits.substr(20));
}

// 26 characters: 130 bits, the top two 0, then the 128 bits of the ULID.
std::string ulid_text(std::span<const std::uint8_t> bytes) {
  std::string out(26, '0');
  for (int i = 0; i < 26; ++i) {
    const int offset = i * 5 - 2;  // bit offset of this character in the 128 bits
    const std::uint64_t value =
        offset < 0 ? get_bits(bytes, 0, 5 + offset) : get_bits(bytes, offset, 5);
    out[static_cast<std::size_t>(i)] = kCrockford[value];
  }
  return out;
}

const char* uuid_variant_name(std::uint8_t byte8) {
  if ((byte8 & 0x80) == 0) return "ncs";
  if ((byte8 & 0xC0) == 0x80) return "rfc9562";
  if ((byte8 & 0xE0) == 0xC0) return "microsoft";
  return "future";
}

// 100 ns ticks from 1582-10-15 (the Gregorian reform) to 1970-01-01.
constexpr std::uint64_t kGregorianToUnix100ns = 0x01B21DD213814000ULL;

std::optional<std::chrono::sys_time<milliseconds>> uuid_time(const std::array<std::uint8_t, 16>& b,
                                                             int version) {
  std::uint64_t ticks = 0;  // 100 ns since 1582-10-15
  switch (version) {
    case 7:
      return std::chrono::sys_time<milliseconds>{
          milliseconds{static_cast<std::int64_t>(get_bits(b, 0, 48))}};
    case 1:  // time_low (32) | time_mid (16) | ver | time_high (12)
      ticks = (get_bits(b, 52, 12) << 48) | (get_bits(b, 32, 16) << 32) | get_bits(b, 0, 32);
      break;
    case 6:  // time_high (32) | time_mid (16) | ver | time_low (12)
      ticks = (get_bits(b, 0, 48) << 12) | get_bits(b, 52, 12);
      break;
    default:
      return std::nullopt;
  }
  const auto unix_100ns =
      static_cast<std::int64_t>(ticks) - static_cast<std::int64_t>(kGregorianToUnix100ns);
  const std::int64_t ms = unix_100ns >= 0 ? unix_100ns / 10'000 : (unix_100ns - 9'999) / 10'000;
  return std::chrono::sys_time<milliseconds>{milliseconds{ms}};
}

Result<DecodedId> decode_uuid(std::string_view text) {
  std::string digits;
  if (text.size() == 36) {
    for (std::size_t i = 0; i < text.size(); ++i) {
      const bool dash_place = i == 8 || i == 13 || i == 18 || i == 23;
      if (dash_place != (text[i] == '-')) {
        return invalid_argument(fmt::format(
            "'{}' is not a UUID: expected hex digits in groups 8-4-4-4-12", internal::shown(text)));
      }
      if (!dash_place) digits += text[i];
    }
  } else {
    digits = text;
  }
  std::array<std::uint8_t, 16> bytes{};
  if (!parse_hex(digits, bytes)) {
    return invalid_argument(fmt::format(
        "'{}' is not a UUID: it holds a character that is not a hex digit", internal::shown(text)));
  }
  DecodedUuid out;
  out.text = uuid_text(bytes);
  out.version = bytes[6] >> 4;
  out.variant = uuid_variant_name(bytes[8]);
  if (out.variant == "rfc9562") out.time = uuid_time(bytes, out.version);
  return DecodedId{std::move(out)};
}

Result<DecodedId> decode_ulid(std::string_view text) {
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t i = 0; i < text.size(); ++i) {
    const int value = crockford_value(text[i]);
    if (value < 0) {
      return invalid_argument(fmt::format(
          "'{}' is not a ULID: '{}' is not a Crockford base32 character (0-9, A-Z without I, L, "
          "O, U)",
          internal::shown(text), text[i]));
    }
    const int offset = static_cast<int>(i) * 5 - 2;
    if (offset < 0) {
      if (value > 7) {
        return invalid_argument(
            fmt::format("'{}' is not a ULID: it is above the largest, 7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
                        internal::shown(text)));
      }
      put_bits(bytes, 0, 3, static_cast<std::uint64_t>(value));
    } else {
      put_bits(bytes, offset, 5, static_cast<std::uint64_t>(value));
    }
  }
  DecodedUlid out;
  out.text = ulid_text(bytes);
  out.time = std::chrono::sys_time<milliseconds>{
      milliseconds{static_cast<std::int64_t>(get_bits(bytes, 0, 48))}};
  std::copy(bytes.begin() + 6, bytes.end(), out.randomness.begin());
  return DecodedId{std::move(out)};
}

Result<DecodedId> decode_object_id(std::string_view text) {
  std::array<std::uint8_t, 12> bytes{};
  if (!parse_hex(text, bytes)) {
    return invalid_argument(
        fmt::format("'{}' is not an ObjectId: it holds a character that is not a hex digit",
                    internal::shown(text)));
  }
  DecodedObjectId out;
  out.text = hex(bytes);
  out.time = std::chrono::sys_seconds{
      std::chrono::seconds{static_cast<std::int64_t>(get_bits(bytes, 0, 32))}};
  out.process_random = get_bits(bytes, 32, 40);
  out.counter = static_cast<std::uint32_t>(get_bits(bytes, 72, 24));
  return DecodedId{std::move(out)};
}

}  // namespace

const char* id_kind_name(IdKind kind) {
  switch (kind) {
    case IdKind::kUuid7:
      return "uuid7";
    case IdKind::kUlid:
      return "ulid";
    case IdKind::kObjectId:
      return "objectid";
  }
  return "?";
}

Result<IdKind> parse_id_kind(std::string_view name) {
  for (auto kind : {IdKind::kUuid7, IdKind::kUlid, IdKind::kObjectId}) {
    if (name == id_kind_name(kind)) return kind;
  }
  return invalid_argument(
      fmt::format("unknown ID kind '{}'; expected uuid7, ulid or objectid", internal::shown(name)));
}

std::string to_text(const FormattedId& id) {
  switch (id.kind) {
    case IdKind::kUuid7:
      return uuid_text(id.binary());
    case IdKind::kUlid:
      return ulid_text(id.binary());
    case IdKind::kObjectId:
      return hex(id.binary());
  }
  return {};
}

FormattedIdSource::FormattedIdSource(Generator& generator, const Layout& layout)
    : generator_(generator), layout_(layout) {}

Result<std::unique_ptr<FormattedIdSource>> FormattedIdSource::create(Generator& generator) {
  const GeneratorOptions& options = generator.options();
  const auto fields = internal::bit_fields(options.layout);
  if (kUuidRandomBits - fields.timestamp_shift < kMinUuidRandomBits) {
    return invalid_argument(
        fmt::format("the layout has {} bits below the timestamp; UUIDv7 and ULID take at most {}",
                    fields.timestamp_shift, kUuidRandomBits - kMinUuidRandomBits));
  }
  std::unique_ptr<FormattedIdSource> source(new FormattedIdSource(generator, options.layout));
  source->counter_bits_ = fields.timestamp_shift;
  source->process_random_ = random_u64() & internal::low_mask(40);
  // Slots of one second: (999 / unit + 1) time units of 2^sequence_bits each.
  const std::uint64_t span = static_cast<std::uint64_t>(999 / options.layout.time_unit.count() + 1)
                             << options.layout.sequence_bits;
  constexpr std::uint64_t kCounterValues = std::uint64_t{1} << kObjectIdCounterBits;
  source->object_ids_fit_ =
      options.layout.sequence_bits < kObjectIdCounterBits && span <= kCounterValues;
  if (source->object_ids_fit_) {
    source->counter_start_ = static_cast<std::uint32_t>(random_u64() % (kCounterValues - span + 1));
  }
  // The floor the generator started above, in Unix ms: the previous run's
  // mark, or the caller's start_above.
  std::int64_t floor_ms = options.start_above.count();
  if (auto mark = generator.stats().mark_at_start) floor_ms = std::max(floor_ms, mark->count());
  if (floor_ms > 0) source->object_id_floor_s_ = floor_ms / 1000;
  return source;
}

Result<FormattedId> FormattedIdSource::format(IdKind kind, Id snowflake) const {
  auto fields = decode(layout_, snowflake);
  if (!fields.ok()) return fields.error();
  const std::uint64_t ms = static_cast<std::uint64_t>(fields->timestamp.count());
  const std::uint64_t counter =
      static_cast<std::uint64_t>(snowflake) & internal::low_mask(counter_bits_);
  FormattedId id;
  id.kind = kind;
  random_bytes(std::span(id.bytes).first(kind == IdKind::kObjectId ? 12 : 16));
  switch (kind) {
    case IdKind::kUuid7: {
      put_bits(id.bytes, 0, 48, ms);
      put_bits(id.bytes, 48, 4, 7);
      // The counter takes the top of rand_a|rand_b, which the variant bits
      // (64, 65) split: up to 12 bits in rand_a, the rest at the top of rand_b.
      const int in_a = std::min(counter_bits_, 12);
      const int in_b = counter_bits_ - in_a;
      put_bits(id.bytes, 52, in_a, counter >> in_b);
      put_bits(id.bytes, 64, 2, 0b10);
      put_bits(id.bytes, 66, in_b, counter);
      break;
    }
    case IdKind::kUlid:
      put_bits(id.bytes, 0, 48, ms);
      put_bits(id.bytes, 48, counter_bits_, counter);
      break;
    case IdKind::kObjectId: {
      if (!object_ids_fit_) {
        return invalid_argument(fmt::format(
            "ObjectIds need a layout whose IDs of one second fit a 24-bit counter; this one "
            "has {} sequence bits per {} ms unit",
            layout_.sequence_bits, layout_.time_unit.count()));
      }
      const auto second = static_cast<std::int64_t>(ms / 1000);
      if (second > 0xFFFFFFFF) {
        return Error{ErrorCode::kTimestampOverflow,
                     "an ObjectId's 4-byte seconds field ends in 2106; this ID's time is later"};
      }
      const std::uint64_t slot =
          (ms % 1000) / static_cast<std::uint64_t>(layout_.time_unit.count());
      const std::uint64_t position = (slot << layout_.sequence_bits) | fields->sequence;
      put_bits(id.bytes, 0, 32, static_cast<std::uint64_t>(second));
      put_bits(id.bytes, 32, 40, process_random_);
      put_bits(id.bytes, 72, kObjectIdCounterBits, counter_start_ + position);
      break;
    }
  }
  return id;
}

Result<IdBlock> FormattedIdSource::take(IdKind kind, std::uint32_t want) {
  if (kind != IdKind::kObjectId || object_id_floor_s_ < 0) return generator_.next_block(want);
  // THE OBJECTID RESTART RULE: issued in a second after the floor.
  const milliseconds earliest{(object_id_floor_s_ + 1) * 1000};
  auto block = generator_.next_block_at_or_after(want, earliest);
  if (block.ok() || block.error().code != ErrorCode::kClockBehind) return block;
  return Error{ErrorCode::kClockBehind,
               fmt::format("ObjectIds resume at {}, the second after the high-water mark this "
                           "process started above (an earlier process may have issued ObjectIds "
                           "up to it), which the clock policy does not let the node run ahead "
                           "to now: {}",
                           format_time(earliest), block.error().message)};
}

Result<FormattedId> FormattedIdSource::next(IdKind kind) {
  auto block = take(kind, 1);
  if (!block.ok()) return block.error();
  return format(kind, block->first);
}

Status FormattedIdSource::next(IdKind kind, std::span<FormattedId> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    const auto want = static_cast<std::uint32_t>(
        std::min<std::size_t>(out.size() - filled, std::numeric_limits<std::uint32_t>::max()));
    auto block = take(kind, want);
    if (!block.ok()) return block.error();
    for (std::uint32_t i = 0; i < block->count; ++i) {
      auto id = format(kind, block->at(i));
      if (!id.ok()) return id.error();
      out[filled++] = *id;
    }
  }
  return {};
}

Result<DecodedId> decode_text(std::string_view text, const Layout& layout) {
  const auto all_hex = [&] {
    return std::all_of(text.begin(), text.end(), [](char c) { return hex_value(c) >= 0; });
  };
  if (text.size() == 36 || (text.size() == 32 && all_hex())) return decode_uuid(text);
  if (text.size() == 26) return decode_ulid(text);
  if (text.size() == 24 && all_hex()) return decode_object_id(text);
  // Anything else is read as a Snowflake ID, whose parser says what is wrong with it.
  auto id = parse_id(text);
  if (!id.ok()) {
    return invalid_argument(
        fmt::format("{}; nor is it a UUID (36 characters 8-4-4-4-12, or 32 hex digits), a ULID (26 "
                    "Crockford base32 characters) or an ObjectId (24 hex digits)",
                    id.error().message));
  }
  auto fields = decode(layout, *id);
  if (!fields.ok()) return fields.error();
  return DecodedId{DecodedSnowflake{*id, *fields}};
}

}  // namespace snowid
