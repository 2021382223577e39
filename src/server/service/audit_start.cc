#include "audit_start.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "audit_tail.h"
#include "high_water_mark.h"
#include "time_text.h"

namespace snowid::server {
namespace {

// True if `file` lies inside `dir` (both as they resolve now).
bool lies_inside(const std::filesystem::path& file, const std::filesystem::path& dir) {
  std::error_code ec;
  const auto parent = std::filesystem::weakly_canonical(file, ec).parent_path();
  const auto held = std::filesystem::weakly_canonical(dir, ec);
  if (ec) return false;
  for (auto at = parent; !at.empty(); at = at.parent_path()) {
    if (at == held) return true;
    if (at == at.root_path()) break;
  }
  return false;
}

}  // namespace

Result<AuditFloor> audit_floor(const ServiceConfig& config, const ResolvedConfig& resolved) {
  if (config.audit.log.empty()) return AuditFloor{};
  if (lies_inside(config.audit.log, config.generator.state_dir)) {
    spdlog::warn(
        "audit_log {} lies inside state_dir {}: a restore of the state directory from an older "
        "copy would put back an older audit log too, and neither the start-up check nor `snowid "
        "check --audit` could notice it; keep the audit log on another volume",
        config.audit.log, config.generator.state_dir);
  }
  if (resolved.coordinator.options.kind != "static") return AuditFloor{};
  const GeneratorOptions& generator = resolved.generator;
  auto latest = audit::latest_audited(
      config.audit.log, generator.layout,
      audit::AuditNode{generator.datacenter_id, generator.worker_id}, kAuditTailBytes);
  if (!latest.ok()) return latest.error();
  if (!*latest) return AuditFloor{};
  // A state file that cannot be read is Node::start's to report.
  auto inspected = inspect_mark(generator.state_file, generator.layout);
  if (!inspected.ok()) return AuditFloor{};
  if (inspected->mark && *inspected->mark >= (*latest)->time) return AuditFloor{};
  const std::string mark = inspected->mark
                               ? fmt::format("holds the mark {}", format_time(*inspected->mark))
                               : std::string("is missing");
  AuditFloor floor{
      (*latest)->time,
      fmt::format(
          "the state file {} {}, but the audit log {} recorded ID {} of this node, issued at {}: "
          "the state directory was restored from an older copy (or its state file removed)",
          generator.state_file.string(), mark, config.audit.log, (*latest)->id,
          format_time((*latest)->time))};
  spdlog::error("{}; starting above that ID, never below it", floor.reason);
  return floor;
}

}  // namespace snowid::server
