// Moments as text: the printing and parsing of times that every snowid front
// end shares (IDs' times, epochs, marks and reservations in messages).
// All functions are pure and thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid {

// "2017-09-20T13:43:08.849Z". A time outside the years 0000 to 9999 is
// written as its Unix ms, saying so.
std::string format_time(std::chrono::milliseconds unix_time);

// Unix ms from ISO 8601 ("2014-09-01", "2014-09-01T00:00:00Z",
// "2014-09-01T00:00:00.123+02:00") or from a plain integer of Unix ms.
Result<std::chrono::milliseconds> parse_time(std::string_view text);

}  // namespace snowid
