// The JSON views of what IdService reports, shared by HTTP (/v1/info,
// /readyz) and gRPC (InfoResponse.info_json), so that both show the same
// field names.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "service.h"

namespace snowid::server {

// /v1/info's body.
nlohmann::json info_json(const NodeInfo& info);

// info_json() as text, bytes that are not UTF-8 replaced by U+FFFD: paths
// and store errors in it may hold any bytes, and dump() would throw on them.
std::string info_json_text(const NodeInfo& info);

// {"enabled": false}, or {"enabled", "ready", "store_reachable", "reason"}.
nlohmann::json segment_readiness_json(const std::optional<SegmentReadiness>& readiness);

}  // namespace snowid::server
