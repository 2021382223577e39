// Shifts and masks of a layout's fields: the one place that knows where each
// field sits. Requires a validated layout.
#pragma once

#include <cstdint>

#include "snowid/layout.h"

namespace snowid::internal {

struct BitFields {
  int timestamp_shift = 0;
  int datacenter_shift = 0;
  int worker_shift = 0;
  int sequence_shift = 0;
  std::uint64_t timestamp_mask = 0;  // field masks, before shifting
  std::uint64_t datacenter_mask = 0;
  std::uint64_t worker_mask = 0;
  std::uint64_t sequence_mask = 0;
  int total_bits = 0;
};

inline std::uint64_t low_mask(int bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

inline BitFields bit_fields(const Layout& layout) {
  BitFields f;
  f.timestamp_mask = low_mask(layout.timestamp_bits);
  f.datacenter_mask = low_mask(layout.datacenter_bits);
  f.worker_mask = low_mask(layout.worker_bits);
  f.sequence_mask = low_mask(layout.sequence_bits);
  if (layout.sequence_position == SequencePosition::kLow) {
    f.sequence_shift = 0;
    f.worker_shift = layout.sequence_bits;
    f.datacenter_shift = f.worker_shift + layout.worker_bits;
    f.timestamp_shift = f.datacenter_shift + layout.datacenter_bits;
  } else {
    f.worker_shift = 0;
    f.datacenter_shift = layout.worker_bits;
    f.sequence_shift = f.datacenter_shift + layout.datacenter_bits;
    f.timestamp_shift = f.sequence_shift + layout.sequence_bits;
  }
  f.total_bits = f.timestamp_shift + layout.timestamp_bits;
  return f;
}

}  // namespace snowid::internal
