// One row per configuration option: its name, how to set it from text, how
// to show its value, and where it has a meaning. Each subsystem declares the
// rows of its own options struct next to that struct; the server lifts them
// into its whole configuration (lift()) and concatenates the lists into the
// one table that the environment, the TOML file, the flags, describe() and
// --check-config all read, in table order.
//
// An option set outside its scope to anything but its default is an error
// (no option is silently ignored): a row's `outside_scope` returns "" where
// the option applies, else words saying where it would ("clock_policy =
// \"wait\""), for that error message.
#pragma once

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "snowid/decode.h"
#include "snowid/error.h"

namespace snowid {

template <typename Config>
using OptionSetter = std::function<Status(Config&, const std::string&)>;
template <typename Config>
using OptionGetter = std::function<std::string(const Config&)>;
// "" where an option applies to `config`, else where it would.
template <typename Config>
using OptionScope = std::function<std::string(const Config&)>;

template <typename Config>
struct OptionRow {
  const char* name;
  OptionSetter<Config> set;
  OptionGetter<Config> get;
  OptionScope<Config> outside_scope;  // empty: applies always
};

template <typename Config>
using OptionRows = std::vector<OptionRow<Config>>;

// "" if `row` applies to `config`, else where it would.
template <typename Config>
std::string outside_scope(const OptionRow<Config>& row, const Config& config) {
  return row.outside_scope ? row.outside_scope(config) : std::string();
}

// `rows` of Part as rows of Whole, where `part_of(whole)` is the Part in a
// Whole (const or not).
template <typename Whole, typename Part, typename PartOf>
OptionRows<Whole> lift_by(const OptionRows<Part>& rows, PartOf part_of) {
  OptionRows<Whole> out;
  out.reserve(rows.size());
  for (const OptionRow<Part>& row : rows) {
    OptionRow<Whole> lifted{
        row.name,
        [part_of, set = row.set](Whole& w, const std::string& v) { return set(part_of(w), v); },
        [part_of, get = row.get](const Whole& w) { return get(part_of(w)); },
        {}};
    if (row.outside_scope) {
      lifted.outside_scope = [part_of, scope = row.outside_scope](const Whole& w) {
        return scope(part_of(w));
      };
    }
    out.push_back(std::move(lifted));
  }
  return out;
}

// `rows` of a part of Whole (`&Whole::part`) as rows of Whole.
template <typename Whole, typename Part>
OptionRows<Whole> lift(Part Whole::*part, const OptionRows<Part>& rows) {
  return lift_by<Whole>(rows, [part](auto& whole) -> auto& { return whole.*part; });
}

// `rows` of a configuration Base as rows of Derived, which extends it.
template <typename Derived, typename Base>
OptionRows<Derived> widen(const OptionRows<Base>& rows) {
  static_assert(std::is_base_of_v<Base, Derived>);
  return lift_by<Derived>(rows, [](auto& whole) -> auto& { return whole; });
}

// The lists one after another, in the order given.
template <typename Config>
OptionRows<Config> concat(std::initializer_list<OptionRows<Config>> lists) {
  OptionRows<Config> out;
  for (const auto& list : lists) out.insert(out.end(), list.begin(), list.end());
  return out;
}

// The row `name` of `rows` restricted to where `scope` holds too: for a
// scope that depends on more than the row's own struct.
template <typename Config>
OptionRows<Config> restrict_row(OptionRows<Config> rows, std::string_view name,
                                OptionScope<Config> scope) {
  for (OptionRow<Config>& row : rows) {
    if (row.name != name) continue;
    row.outside_scope = [own = row.outside_scope, scope](const Config& c) {
      std::string where = own ? own(c) : std::string();
      return where.empty() ? scope(c) : where;
    };
  }
  return rows;
}

namespace option {

using std::chrono::milliseconds;

// An unsigned integer in [0, max].
template <typename Config, typename T>
OptionSetter<Config> number(T Config::*field, T max) {
  return [field, max](Config& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, static_cast<std::uint64_t>(max), "value");
    if (!n.ok()) return n.error();
    c.*field = static_cast<T>(*n);
    return {};
  };
}

// A duration in milliseconds, at most `max_ms`.
template <typename Config>
OptionSetter<Config> duration(milliseconds Config::*field, std::uint64_t max_ms = 86'400'000) {
  return [field, max_ms](Config& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, max_ms, "milliseconds");
    if (!n.ok()) return n.error();
    c.*field = milliseconds{static_cast<long long>(*n)};
    return {};
  };
}

// A duration in milliseconds, at least 1.
template <typename Config>
OptionSetter<Config> positive_duration(milliseconds Config::*field) {
  return [field](Config& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, 86'400'000, "milliseconds");
    if (!n.ok()) return n.error();
    if (*n == 0) return invalid_argument("must be at least 1 ms");
    c.*field = milliseconds{static_cast<long long>(*n)};
    return {};
  };
}

template <typename Config>
OptionSetter<Config> text(std::string Config::*field) {
  return [field](Config& c, const std::string& v) -> Status {
    c.*field = v;
    return {};
  };
}

// "true"/"1" or "false"/"0".
template <typename Config>
OptionSetter<Config> boolean(bool Config::*field) {
  return [field](Config& c, const std::string& v) -> Status {
    if (v == "true" || v == "1") {
      c.*field = true;
    } else if (v == "false" || v == "0") {
      c.*field = false;
    } else {
      return invalid_argument(fmt::format("'{}' is not true or false", v.substr(0, 40)));
    }
    return {};
  };
}

// An integer in [min, max].
template <typename Config>
OptionSetter<Config> bounded(std::int64_t Config::*field, std::int64_t min, std::int64_t max) {
  return [field, min, max](Config& c, const std::string& v) -> Status {
    auto n = parse_unsigned(v, static_cast<std::uint64_t>(max), "value");
    if (!n.ok()) return n.error();
    if (static_cast<std::int64_t>(*n) < min) {
      return invalid_argument(fmt::format("{} is below the minimum {}", *n, min));
    }
    c.*field = static_cast<std::int64_t>(*n);
    return {};
  };
}

// A fraction in [0, 1], written as a decimal number ("0.1", "1", "0").
template <typename Config>
OptionSetter<Config> fraction(double Config::*field) {
  return [field](Config& c, const std::string& v) -> Status {
    double value = -1;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || !(value >= 0.0) ||
        !(value <= 1.0)) {
      return invalid_argument(
          fmt::format("'{}' is not a fraction between 0 and 1 (e.g. 0.1)", v.substr(0, 40)));
    }
    c.*field = value;
    return {};
  };
}

// A value `parse` (Result<T>(std::string_view)) reads from the text.
template <typename Config, typename T, typename Parse>
OptionSetter<Config> parsed(T Config::*field, Parse parse) {
  return [field, parse](Config& c, const std::string& v) -> Status {
    auto value = parse(v);
    if (!value.ok()) return value.error();
    c.*field = *value;
    return {};
  };
}

// Text kept as it is written, once `check` (returning a Result or a
// Status) accepts it.
template <typename Config, typename Check>
OptionSetter<Config> checked_text(std::string Config::*field, Check check) {
  return [field, check](Config& c, const std::string& v) -> Status {
    if (auto checked = check(v); !checked.ok()) return checked.error();
    c.*field = v;
    return {};
  };
}

// Getters: a field's value as describe() shows it.
template <typename Config>
OptionGetter<Config> shown(std::string Config::*field) {
  return [field](const Config& c) { return c.*field; };
}
template <typename Config>
OptionGetter<Config> shown(bool Config::*field) {
  return [field](const Config& c) { return std::string(c.*field ? "true" : "false"); };
}
template <typename Config, typename T>
requires(std::is_arithmetic_v<T> &&
         !std::is_same_v<T, bool>) OptionGetter<Config> shown(T Config::*field) {
  return [field](const Config& c) { return std::to_string(c.*field); };
}
template <typename Config, typename Rep, typename Period>
OptionGetter<Config> shown(std::chrono::duration<Rep, Period> Config::*field) {
  return [field](const Config& c) { return std::to_string((c.*field).count()); };
}
// A secret: "(set)" or "".
template <typename Config>
OptionGetter<Config> secret(std::string Config::*field) {
  return [field](const Config& c) { return std::string((c.*field).empty() ? "" : "(set)"); };
}

// The row of a text option shown as it is.
template <typename Config>
OptionRow<Config> text_row(const char* name, std::string Config::*field) {
  return {name, text(field), shown(field), {}};
}

}  // namespace option
}  // namespace snowid
