// The latest ID an audit log (audit_format.h) recorded for one node: what
// snowidd checks its state file's mark against at start, and what
// `snowid check --audit LOG --state-file FILE` compares with a state file.
//
// An audit log that lives outside the state directory survives a restore of
// that directory from an older copy; its records then hold IDs above the
// restored mark, which a node started on the mark alone would issue again.
//
// Reading: the last `max_bytes` of the file (all of it with kWholeAuditLog),
// line by line; the first, partial line of a tail and a last line without
// '\n' (torn) are skipped, and so are records of another node (if one is named)
// and records that follow a header of another layout.
//
// Thread-safety: a free function with no shared state.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>

#include "snowid/decode.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::audit {

inline constexpr std::uint64_t kWholeAuditLog = std::numeric_limits<std::uint64_t>::max();

struct LatestAudited {
  Id id = 0;                          // the highest ID of the node recorded
  std::chrono::milliseconds time{0};  // Unix ms at which that ID's time unit starts
};

struct AuditNode {
  std::uint64_t datacenter = 0;
  std::uint64_t worker = 0;
};

// The latest record of `node` (of any node if nullopt) in the part read;
// nullopt if it holds none. kUnavailable naming the file if it cannot be read.
Result<std::optional<LatestAudited>> latest_audited(const std::filesystem::path& path,
                                                    const Layout& layout,
                                                    std::optional<AuditNode> node,
                                                    std::uint64_t max_bytes);

}  // namespace snowid::audit
