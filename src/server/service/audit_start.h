// At start, snowidd checks its state file against its audit log (option
// audit_log), so that a state directory restored from an older copy is
// noticed instead of repeating IDs.
//
// The state file promises that no ID above its mark was issued; the audit
// log records every ID handed out. A node with a fixed id reads the last
// kAuditTailBytes of its log: if it recorded an ID of this node in a time
// unit at or above the mark (or there is no mark at all), the state was put
// back from an older copy (or removed), and the node starts above the
// audited ID, or refuses as its clock policy says, never below it. It says
// so in the log at error level. This only helps if the audit log was not
// restored with the state directory: it warns at start when audit_log lies
// inside state_dir. A leased node checks the log per node id it claims
// (cluster_marks.h).
//
// Thread-safety: call once, from the start-up thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "service_config.h"
#include "snowid/error.h"

namespace snowid::server {

// How much of the audit log's end is read: the records of the last
// seconds of load, far more than the few written since the last mark.
inline constexpr std::uint64_t kAuditTailBytes = 8 << 20;

struct AuditFloor {
  std::chrono::milliseconds start_above{0};  // 0: the audit log asks for nothing
  std::string reason;                        // why, for the start-up failure message
};

// The floor the audit log sets for a node with a fixed id (nothing for a
// leased one: its node id is known once claimed, and ClusterMarks::prepare
// checks the log then). kUnavailable if the log
// cannot be read.
Result<AuditFloor> audit_floor(const ServiceConfig& config, const ResolvedConfig& resolved);

}  // namespace snowid::server
