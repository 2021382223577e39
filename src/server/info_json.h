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

// {"enabled": false}, or {"enabled", "ready", "store_reachable", "reason"}.
nlohmann::json segment_readiness_json(const std::optional<SegmentReadiness>& readiness);

}  // namespace snowid::server
