#include "id_json.h"

#include <fmt/format.h>

#include <string>
#include <variant>

#include "time_text.h"

namespace snowid {

nlohmann::json decoded_id_json(Id id, const IdFields& fields) {
  return nlohmann::json{
      {"id", std::to_string(id)},
      {"timestamp_ms", fields.timestamp.count()},
      {"time", format_time(fields.timestamp)},
      {"datacenter", fields.datacenter},
      {"worker", fields.worker},
      {"sequence", fields.sequence},
  };
}

namespace {

void add_time(nlohmann::json& out, std::chrono::milliseconds unix_time) {
  out["timestamp_ms"] = unix_time.count();
  out["time"] = format_time(unix_time);
}

struct DecodedJson {
  nlohmann::json operator()(const DecodedSnowflake& id) const {
    return decoded_id_json(id.id, id.fields);
  }
  nlohmann::json operator()(const DecodedUuid& uuid) const {
    nlohmann::json out{{"kind", "uuid"},
                       {"uuid", uuid.text},
                       {"version", uuid.version},
                       {"variant", uuid.variant}};
    if (uuid.time) add_time(out, uuid.time->time_since_epoch());
    return out;
  }
  nlohmann::json operator()(const DecodedUlid& ulid) const {
    nlohmann::json out{{"kind", "ulid"}, {"ulid", ulid.text}};
    add_time(out, ulid.time.time_since_epoch());
    std::string randomness;
    for (std::uint8_t b : ulid.randomness) randomness += fmt::format("{:02x}", b);
    out["randomness"] = randomness;
    return out;
  }
  nlohmann::json operator()(const DecodedObjectId& oid) const {
    nlohmann::json out{{"kind", "objectid"}, {"objectid", oid.text}};
    add_time(out, oid.time.time_since_epoch());
    out["process_random"] = fmt::format("{:010x}", oid.process_random);
    out["counter"] = oid.counter;
    return out;
  }
};

}  // namespace

nlohmann::json decoded_json(const DecodedId& decoded) { return std::visit(DecodedJson{}, decoded); }

nlohmann::json layout_json(const Layout& layout, std::chrono::milliseconds now_unix) {
  const LayoutFacts facts = layout_facts(layout, now_unix);
  nlohmann::json out{
      {"timestamp_bits", layout.timestamp_bits},
      {"datacenter_bits", layout.datacenter_bits},
      {"worker_bits", layout.worker_bits},
      {"sequence_bits", layout.sequence_bits},
      {"time_unit_ms", layout.time_unit.count()},
      {"epoch_ms", layout.epoch.count()},
      {"epoch", format_time(layout.epoch)},
      {"sequence_position", sequence_position_name(layout.sequence_position)},
      {"total_bits", facts.total_bits},
      {"max_datacenter_id", facts.max_datacenter_id},
      {"max_worker_id", facts.max_worker_id},
      {"ids_per_unit", facts.ids_per_unit},
      {"ids_per_second", facts.ids_per_second},
      {"overflow_at_ms", facts.overflow_at.count()},
      {"overflow_at", format_time(facts.overflow_at)},
      {"max_id", std::to_string(facts.max_id)},
      {"warning", nullptr},
  };
  if (facts.warning) out["warning"] = *facts.warning;
  return out;
}

}  // namespace snowid
