// JSON views of IDs and layouts, shared by the CLI and the servers so that
// every front end prints the same field names. IDs are decimal strings:
// JavaScript loses precision above 2^53.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "snowid/decode.h"
#include "snowid/layout.h"

namespace snowid {

// {"id":"…","timestamp_ms":…,"time":"…Z","datacenter":…,"worker":…,"sequence":…}
nlohmann::json decoded_id_json(Id id, const IdFields& fields);

// The layout's settings and derived facts; "warning" is null or a sentence.
nlohmann::json layout_json(const Layout& layout, std::chrono::milliseconds now_unix);

}  // namespace snowid
