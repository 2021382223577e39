// Segment mode's metrics, in Prometheus text for snowidd's /metrics.
#pragma once

#include <cstddef>
#include <string>

#include "snowid/ext/segment.h"

namespace snowid {

// Per-tag series for at most `max_tags` tags (the first the allocator
// lists), then the store's reachability, readiness and the number of tags.
std::string segment_metrics(const SegmentAllocator& segments, std::size_t max_tags);

}  // namespace snowid
