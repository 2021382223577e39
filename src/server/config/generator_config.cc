#include "generator_config.h"

#include "epoch_zone.h"
#include "time_text.h"

namespace snowid::server {
namespace {

using std::chrono::milliseconds;
using G = GeneratorConfig;
using option::shown;

// The longest max_wait_ms: a request waiting for the clock longer than this
// is one an HTTP client or a load balancer would have given up on.
constexpr std::uint64_t kMaxWaitBound = 10'000;

// A layout field the preset decides unless it is set.
template <typename T, typename Show>
OptionGetter<LayoutSpec> shown_or_preset(std::optional<T> LayoutSpec::*field, Show show) {
  return [field, show](const LayoutSpec& c) -> std::string {
    const std::optional<T>& value = c.*field;
    return value ? std::string(show(*value)) : "(preset)";
  };
}

OptionRow<LayoutSpec> bits_row(const char* name, std::optional<int> LayoutSpec::*field) {
  return {name,
          [field](LayoutSpec& c, const std::string& v) -> Status {
            auto n = parse_unsigned(v, 64, "bits");
            if (!n.ok()) return n.error();
            c.*field = static_cast<int>(*n);
            return {};
          },
          shown_or_preset(field, [](int bits) { return std::to_string(bits); }),
          {}};
}

OptionRows<LayoutSpec> layout_rows() {
  using L = LayoutSpec;
  return {
      {"preset", option::checked_text(&L::preset, preset), shown(&L::preset), {}},
      bits_row("timestamp_bits", &L::timestamp_bits),
      bits_row("datacenter_bits", &L::datacenter_bits),
      bits_row("worker_bits", &L::worker_bits),
      bits_row("sequence_bits", &L::sequence_bits),
      {"time_unit_ms",
       option::parsed(&L::time_unit,
                      [](std::string_view v) -> Result<milliseconds> {
                        auto n = parse_unsigned(v, 86'400'000, "time unit");
                        if (!n.ok()) return n.error();
                        return milliseconds{static_cast<long long>(*n)};
                      }),
       shown_or_preset(&L::time_unit,
                       [](milliseconds unit) { return std::to_string(unit.count()); }),
       {}},
      {"epoch", option::parsed(&L::epoch, parse_time), shown_or_preset(&L::epoch, format_time), {}},
      {"sequence_position",
       option::parsed(&L::sequence_position, parse_sequence_position),
       shown_or_preset(&L::sequence_position, sequence_position_name),
       {}},
  };
}

// The layout rows, the epoch's remembering whether its text named a zone
// (and showing a zoneless one without 'Z', so that --check-config's output
// reads back the same), then epoch_zone.
OptionRows<G> zoned_layout_rows() {
  OptionRows<G> rows = lift(&G::layout, layout_rows());
  for (OptionRow<G>& row : rows) {
    if (std::string_view(row.name) != "epoch") continue;
    row.set = [set = row.set](G& c, const std::string& v) -> Status {
      if (Status parsed = set(c, v); !parsed.ok()) return parsed;
      c.epoch_names_zone = time_text_names_zone(v);
      return {};
    };
    row.get = [](const G& c) -> std::string {
      if (!c.layout.epoch) return "(preset)";
      return c.epoch_names_zone ? format_time(*c.layout.epoch) : format_wall_time(*c.layout.epoch);
    };
  }
  rows.push_back({"epoch_zone", option::checked_text(&G::epoch_zone, check_time_zone),
                  shown(&G::epoch_zone), {}});
  return rows;
}

std::string outside_policy(const G& c, ClockPolicy policy) {
  return c.clock_policy == policy ? ""
                                  : fmt::format("clock_policy = \"{}\"", clock_policy_name(policy));
}

}  // namespace

OptionRows<GeneratorConfig> node_id_rows() {
  return {
      {"datacenter_id",
       option::number(&G::datacenter_id, std::uint64_t{0xffffffff}),
       shown(&G::datacenter_id),
       {}},
      {"worker_id",
       option::number(&G::worker_id, std::uint64_t{0xffffffff}),
       shown(&G::worker_id),
       {}},
  };
}

OptionRows<GeneratorConfig> generator_rows() {
  const auto wait_policy = [](const G& c) { return outside_policy(c, ClockPolicy::kWait); };
  const auto monotonic_policy = [](const G& c) {
    return outside_policy(c, ClockPolicy::kMonotonic);
  };
  OptionRows<G> clock = {
      {"clock_policy",
       option::parsed(&G::clock_policy, parse_clock_policy),
       [](const G& c) { return std::string(clock_policy_name(c.clock_policy)); },
       {}},
      {"max_wait_ms", option::duration(&G::max_wait, kMaxWaitBound), shown(&G::max_wait),
       wait_policy},
      {"max_drift_ms", option::duration(&G::max_drift), shown(&G::max_drift), monotonic_policy},
      {"max_start_wait_ms", option::duration(&G::max_start_wait), shown(&G::max_start_wait),
       wait_policy},
      // Scoped by the server too: it needs the state file a fixed node id keeps.
      {"continue_above_mark",
       option::boolean(&G::continue_above_mark),
       shown(&G::continue_above_mark),
       {}},
      {"sequence_start",
       option::parsed(&G::sequence_start, parse_sequence_start),
       [](const G& c) { return std::string(sequence_start_name(c.sequence_start)); },
       {}},
      option::text_row("state_dir", &G::state_dir),
  };
  return concat<G>({zoned_layout_rows(), clock});
}

Result<Layout> resolve_layout(const GeneratorConfig& config) {
  LayoutSpec spec = config.layout;
  if (Status zoned = apply_epoch_zone(spec, config.epoch_zone, config.epoch_names_zone);
      !zoned.ok()) {
    return zoned.error();
  }
  return resolve(spec);
}

}  // namespace snowid::server
