// A layout's epoch read in a time zone: the wall-clock date and time of an
// epoch ("2016-05-20" for Baidu's uid-generator) name a different moment in
// each zone, and uid-generator reads its epochStr in the JVM's default zone,
// so IDs made in Asia/Shanghai count from 2016-05-19T16:00:00Z. Zones come
// from the system's tz database (/usr/share/zoneinfo, or $TZDIR; Debian's
// tzdata) through Abseil's absl::TimeZone, the Abseil gRPC links already:
// no zone rules are written here. Pure functions, safe from any thread.
#pragma once

#include <chrono>
#include <string_view>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

// The zone every epoch is read in unless told otherwise.
inline constexpr std::string_view kDefaultEpochZone = "UTC";

// Ok if `zone` names a zone of the tz database ("Asia/Shanghai", "UTC");
// kInvalidArgument naming it otherwise.
Status check_time_zone(std::string_view zone);

// The moment the wall-clock reading `wall` (a date and time written as if
// in UTC, as parse_time reads text without a zone) names in `zone`. A reading
// the zone skips (clocks put forward) takes the offset before the change and
// a repeated one (clocks put back) the later moment, as java.util.Calendar
// resolves them. kInvalidArgument for an unknown zone.
Result<std::chrono::milliseconds> wall_time_in_zone(std::chrono::milliseconds wall,
                                                    std::string_view zone);

// `spec` with its epoch read in `zone`: the preset's epoch, or spec.epoch
// when it was given without a zone (a date, or a date and time without 'Z'
// or an offset: `epoch_names_zone` false). An epoch whose text fixed its own
// moment (Unix ms, 'Z', an offset) cannot be moved: kInvalidArgument then,
// unless `zone` is UTC. spec.epoch holds the moment afterwards.
Status apply_epoch_zone(LayoutSpec& spec, std::string_view zone, bool epoch_names_zone);

}  // namespace snowid
