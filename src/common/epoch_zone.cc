// Epochs read in a time zone (see epoch_zone.h), through absl::TimeZone.
#include "epoch_zone.h"

#include <absl/time/civil_time.h>
#include <absl/time/time.h>
#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace snowid {
namespace {

using std::chrono::milliseconds;

// A tz database name: letters, digits, '/', '_', '-', '+', not starting with
// '/' and without "..": a name, never a path of the caller's choosing.
bool looks_like_zone_name(std::string_view zone) {
  auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '_' || c == '-' || c == '+';
  };
  return !zone.empty() && zone.size() <= 64 && zone.front() != '/' &&
         zone.find("..") == std::string_view::npos &&
         std::all_of(zone.begin(), zone.end(), allowed);
}

Result<absl::TimeZone> load_zone(std::string_view zone) {
  absl::TimeZone loaded;
  if (looks_like_zone_name(zone) && absl::LoadTimeZone(std::string(zone), &loaded)) return loaded;
  return invalid_argument(fmt::format(
      "unknown time zone '{}': give a name of the tz database (/usr/share/zoneinfo, package "
      "tzdata), such as Asia/Shanghai, America/New_York or UTC",
      zone.substr(0, 64)));
}

}  // namespace

Status check_time_zone(std::string_view zone) {
  auto loaded = load_zone(zone);
  if (!loaded.ok()) return loaded.error();
  return {};
}

Result<milliseconds> wall_time_in_zone(milliseconds wall, std::string_view zone) {
  auto loaded = load_zone(zone);
  if (!loaded.ok()) return loaded.error();
  const milliseconds whole_seconds = std::chrono::floor<std::chrono::seconds>(wall);
  const absl::CivilSecond civil =
      absl::ToCivilSecond(absl::FromUnixMillis(whole_seconds.count()), absl::UTCTimeZone());
  const absl::TimeZone::TimeInfo info = loaded->At(civil);
  const absl::Time moment = info.kind == absl::TimeZone::TimeInfo::REPEATED ? info.post : info.pre;
  return milliseconds{absl::ToUnixMillis(moment)} + (wall - whole_seconds);
}

Status apply_epoch_zone(LayoutSpec& spec, std::string_view zone, bool epoch_names_zone) {
  if (Status known = check_time_zone(zone); !known.ok()) return known;
  if (zone == kDefaultEpochZone) return {};
  if (spec.epoch && epoch_names_zone) {
    return invalid_argument(fmt::format(
        "epoch zone {} cannot move an epoch that names its own zone (Unix ms, 'Z' or an offset); "
        "give the epoch as a date or a date and time without one (2016-05-20 or "
        "2016-05-20T00:00:00)",
        zone));
  }
  milliseconds wall{0};
  if (spec.epoch) {
    wall = *spec.epoch;
  } else {
    auto base = preset(spec.preset);
    if (!base.ok()) return base.error();
    wall = base->epoch;
  }
  auto moment = wall_time_in_zone(wall, zone);
  if (!moment.ok()) return moment.error();
  spec.epoch = *moment;
  return {};
}

}  // namespace snowid
