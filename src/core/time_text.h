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

// Whether `text`, as parse_time reads it, fixes its moment itself: Unix ms,
// or a time ending in 'Z' or an offset. A date alone, or a date and time
// without either, is a wall-clock reading that parse_time takes in UTC and
// an epoch zone may move (epoch_zone.h).
bool time_text_names_zone(std::string_view text);

// format_time's text without its 'Z', the wall-clock reading parse_time
// reads back as the same moment and time_text_names_zone() as zoneless.
std::string format_wall_time(std::chrono::milliseconds unix_time);

}  // namespace snowid
