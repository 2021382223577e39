// JSON views of IDs and layouts, shared by the CLI and the servers so that
// every front end prints the same field names. IDs are decimal strings:
// JavaScript loses precision above 2^53.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>

#include "snowid/decode.h"
#include "snowid/id_formats.h"
#include "snowid/layout.h"

namespace snowid {

// {"id":"…","timestamp_ms":…,"time":"…Z","datacenter":…,"worker":…,"sequence":…}
nlohmann::json decoded_id_json(Id id, const IdFields& fields);

// Any decoded ID (decode_text): a Snowflake ID as decoded_id_json; else
// {"kind":"uuid","uuid":"…","version":7,"variant":"rfc9562","timestamp_ms":…,"time":"…Z"}
// (the times only for versions 1, 6 and 7),
// {"kind":"ulid","ulid":"…","timestamp_ms":…,"time":"…Z","randomness":"<20 hex digits>"} or
// {"kind":"objectid","objectid":"…","timestamp_ms":…,"time":"…Z",
//  "process_random":"<10 hex digits>","counter":…}.
nlohmann::json decoded_json(const DecodedId& decoded);

// The layout's settings and derived facts; "warning" is null or a sentence.
nlohmann::json layout_json(const Layout& layout, std::chrono::milliseconds now_unix);

}  // namespace snowid
