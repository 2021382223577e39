#include "state_commands.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "audit_format.h"
#include "exit_codes.h"
#include "high_water_mark.h"
#include "snowid/decode.h"
#include "time_text.h"

namespace snowid::cli {
namespace {

using std::chrono::milliseconds;

milliseconds wall_now() {
  return std::chrono::duration_cast<milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
}

// The latest time unit of node `node` ("D/W", or any node if empty) that
// the audit logs record an ID in, and the nodes they name.
struct AuditProof {
  std::optional<milliseconds> last_unit;
  Id last_id = 0;
  std::uint64_t records = 0;
  std::uint64_t unreadable_lines = 0;
  std::map<std::string, std::uint64_t> records_per_node;
};

Result<AuditProof> read_audit_logs(const std::vector<std::string>& paths, const Layout& layout,
                                   const std::string& node) {
  AuditProof proof;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return invalid_argument(fmt::format("cannot read audit log {}", path));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') {
        if (auto named = audit::header_layout(line); named && *named != describe(layout)) {
          return invalid_argument(
              fmt::format("audit log {} was written with layout '{}', not "
                          "'{}': give the layout options "
                          "snowidd ran with",
                          path, *named, describe(layout)));
        }
        continue;
      }
      auto record = audit::parse_record(line);
      if (!record.ok()) {
        ++proof.unreadable_lines;  // a torn record: never sent, and at most as
                                   // high as the next
        continue;
      }
      const std::string name = fmt::format("{}/{}", record->datacenter, record->worker);
      ++proof.records_per_node[name];
      if (!node.empty() && name != node) continue;
      ++proof.records;
      auto fields = decode(layout, record->last);
      if (!fields.ok()) return fields.error();
      if (!proof.last_unit || fields->timestamp > *proof.last_unit ||
          (fields->timestamp == *proof.last_unit && record->last > proof.last_id)) {
        proof.last_unit = fields->timestamp;
        proof.last_id = record->last;
      }
    }
    if (in.bad()) return invalid_argument(fmt::format("cannot read audit log {}", path));
  }
  return proof;
}

}  // namespace

StateCommands::StateCommands(CLI::App& app, LayoutArgs& layout_args) : layout_args_(layout_args) {
  state_ = app.add_subcommand("state", "Show or lower a generator's persisted high-water mark");
  state_->require_subcommand(1);
  const auto add_common = [this, &layout_args](CLI::App* command) {
    command->add_option("--state-dir", state_dir_, "snowidd's state_dir (holds generator.state)")
        ->default_str("./.snowid");
    command->add_option("--state-file", state_file_,
                        "The state file itself (snowid gen --state-file); "
                        "overrides --state-dir");
    layout_args.add_to(*command);
  };
  show_ = state_->add_subcommand("show", "Show the mark and what a restart will do with it");
  add_common(show_);
  lower_ = state_->add_subcommand("lower",
                                  "Lower the mark to the last ID the audit "
                                  "logs record (with --yes; snowidd stopped)");
  add_common(lower_);
  lower_->add_option("--audit", audit_logs_, "snowidd's audit log (repeatable)")->required();
  lower_->add_option("--node", node_,
                     "DATACENTER/WORKER of the records to use; needed when the "
                     "logs name several");
  lower_->add_flag("--yes", yes_, "Lower it; without this, only say what would be done");
}

bool StateCommands::parsed() const { return state_->parsed(); }

int StateCommands::run() const { return show_->parsed() ? show() : lower(); }

std::string StateCommands::state_file() const {
  return state_file_.empty() ? state_dir_ + "/generator.state" : state_file_;
}

int StateCommands::show() const {
  auto layout = layout_args_.resolve_layout();
  if (!layout.ok()) return report_error(layout.error());
  auto seen = inspect_mark(state_file(), *layout);
  if (!seen.ok()) return report_error(seen.error());
  const milliseconds now = wall_now();
  std::printf("state file  %s\n", seen->path.c_str());
  std::printf("in use      %s\n",
              seen->holder ? fmt::format("yes, by pid {}", *seen->holder).c_str() : "no");
  std::printf("clock       %s\n", format_time(now).c_str());
  if (!seen->mark) {
    std::printf(
        "mark        none: nothing is at the path, so the next start "
        "is a first start\n");
    return 0;
  }
  const milliseconds mark = *seen->mark;
  const long long ahead = (mark - now).count();
  std::printf("mark        %s (Unix ms %lld)\n", format_time(mark).c_str(),
              static_cast<long long>(mark.count()));
  if (ahead <= 0) {
    std::printf(
        "meaning     the mark is %lld ms behind the clock: a restart "
        "starts at once "
        "under every clock policy\n",
        -ahead);
    return 0;
  }
  std::printf(
      "meaning     the mark is %lld ms ahead of the clock. snowidd "
      "keeps it up to "
      "reserve_ahead (500 ms) ahead of use while it runs; further "
      "ahead means IDs were issued "
      "that far ahead (the clock was ahead while it served), or the "
      "clock was set back since\n",
      ahead);
  std::printf(
      "restart     reject: refused for %lld ms; wait: waits if %lld ms "
      "<= max_start_wait_ms "
      "(default 10000), else refused; monotonic: starts if %lld ms <= "
      "max_drift_ms (default "
      "1000), else refused\n",
      ahead, ahead, ahead);
  std::printf(
      "way out     continue_above_mark = true starts at once on a "
      "logical clock %lld ms ahead; "
      "or, if an audit log recorded every ID this node issued, `snowid "
      "state lower --audit "
      "FILE` lowers the mark to the last of them\n",
      ahead);
  return 0;
}

int StateCommands::lower() const {
  auto layout = layout_args_.resolve_layout();
  if (!layout.ok()) return report_error(layout.error());
  auto seen = inspect_mark(state_file(), *layout);
  if (!seen.ok()) return report_error(seen.error());
  if (!seen->mark)
    return report_error(
        invalid_argument("there is no mark to lower: nothing is at " + seen->path.string()));
  auto proof = read_audit_logs(audit_logs_, *layout, node_);
  if (!proof.ok()) return report_error(proof.error());
  if (node_.empty() && proof->records_per_node.size() > 1) {
    std::string nodes;
    for (const auto& [name, count] : proof->records_per_node) nodes += " " + name;
    return report_error(
        invalid_argument(fmt::format("the audit logs record several nodes ({} "
                                     "); say which is this state's with --node",
                                     nodes)));
  }
  if (!proof->last_unit) {
    return report_error(invalid_argument(
        fmt::format("the audit logs record no ID{}: they prove nothing about this state",
                    node_.empty() ? "" : " of node " + node_)));
  }
  const milliseconds target = *proof->last_unit;
  std::printf("state file  %s\n", seen->path.c_str());
  std::printf("mark        %s\n", format_time(*seen->mark).c_str());
  std::printf(
      "audit logs  %llu records; the last ID %lld lies in the unit starting "
      "%s%s\n",
      static_cast<unsigned long long>(proof->records), static_cast<long long>(proof->last_id),
      format_time(target).c_str(),
      proof->unreadable_lines > 0
          ? fmt::format(" ({} torn lines skipped)", proof->unreadable_lines).c_str()
          : "");
  if (target >= *seen->mark) {
    std::printf("nothing to do: the mark is not above the last audited ID\n");
    return 0;
  }
  std::printf(
      "new mark    %s: the next start begins right above the last "
      "audited ID. This is "
      "sound only if the audit logs recorded every ID issued under "
      "this state file "
      "(audit_log was on since the state's first start)\n",
      format_time(target).c_str());
  if (!yes_) {
    std::printf("not lowered: run again with --yes to lower it\n");
    return 0;
  }
  Status lowered = lower_mark(state_file(), *layout, target);
  if (!lowered.ok()) return report_error(lowered.error());
  std::printf("lowered\n");
  return 0;
}

}  // namespace snowid::cli
