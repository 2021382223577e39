// The node id that MyBatis-Plus's Sequence and Hutool's IdUtil derive by
// themselves: the datacenter id from the last two bytes of a MAC address,
// the worker id from the hash of the datacenter id and the process id. snowid
// offers it only on request, for one machine's embedded use (`snowid gen
// --node-id-from mac-pid`), and to show which node id applications using
// those libraries take on a machine (`snowid node-id mac-pid`): it can
// collide, see mac_pid_collision_odds() and docs/design.md, "MAC + PID".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid {

// ((mac[n-2] | mac[n-1] << 8) >> 6) % (max_datacenter_id + 1): the bits those
// libraries take from the last two bytes.
std::uint64_t mac_datacenter_id(std::span<const std::uint8_t> mac, std::uint64_t max_datacenter_id);

// (Java's String.hashCode of the decimal datacenter id followed by the
// decimal pid, & 0xffff) % (max_worker_id + 1).
std::uint64_t pid_worker_id(std::uint64_t datacenter_id, std::int64_t pid,
                            std::uint64_t max_worker_id);

struct MacPidNodeId {
  std::string interface;  // "" if the hostname's address is on no interface
  std::string mac;        // "aa:bb:cc:dd:ee:ff", "" if none
  std::string how;        // how the interface and the datacenter id were chosen
  std::int64_t pid = 0;
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
};

// The pair for process `pid` on this machine, in `layout`'s ranges. The MAC
// is that of `interface` if given (kInvalidArgument if it has none), else, as
// MyBatis-Plus does, that of the interface holding the address the hostname
// resolves to; an address on no interface gives datacenter 1, an interface
// without a MAC datacenter 0, as there.
Result<MacPidNodeId> mac_pid_node_id(const Layout& layout, std::int64_t pid,
                                     const std::optional<std::string>& interface);

// The chance that some two of `processes` processes get the same pair:
// each on a machine of its own (datacenter and worker both vary), or all on
// one machine (only the worker varies), taking the ids as uniform.
double mac_pid_collision_odds(const Layout& layout, std::uint64_t processes, bool one_machine);

}  // namespace snowid
