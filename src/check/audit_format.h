// The audit log's line format: written by snowidd (option audit_log), read by
// `snowid check --audit`. This file is the one place that knows it.
//
// A plain text file that only grows; every line ends with '\n':
//
//   # snowid-audit v1 incarnation=3f2a9c0d1e5b7a61 started=2026-11-22T10:00:00.000Z ...
//   3f2a9c0d1e5b7a61 0/7 2124008231138230272 2124008231138230371
//
// (the header line goes on: "pid=4242 node=0/7 layout=41/5/5/12 unit=1ms
// epoch=2010-11-04T01:42:54.657Z seq=low").
//
// A record is `<incarnation> <datacenter>/<worker> <first> <last>`: one block
// of IDs that one generator issued in one step (one time unit, consecutive
// sequence numbers), so it covers exactly the IDs of that node whose time
// unit is first's and whose sequence lies between first's and last's. The
// incarnation is a random 64-bit number (16 hex digits) drawn at each start
// of snowidd; every start appends a header line (a comment starting
// "# snowid-audit") naming it, with the start time, the process id, the node
// and the layout. Other lines starting with '#' are comments.
//
// Torn writes. snowidd appends each request's records with one write(2)
// before the response is sent, and answers 503 if the write fails. A write
// that fails part-way (disk full) leaves a torn line, and the next write
// starts with "\n" + kAuditTornMarker + "\n", so the torn line is the last
// non-comment line above a marker line. A reader drops that line, and also
// a last line without '\n' (a write cut short, or a machine crash): neither
// was acknowledged to a client.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "snowid/decode.h"
#include "snowid/error.h"
#include "snowid/layout.h"

namespace snowid::audit {

// Starts every header line.
inline constexpr std::string_view kHeaderPrefix = "# snowid-audit v1 ";
// A line of its own after a torn record; it starts with '#'.
inline constexpr std::string_view kTornMarker =
    "# torn record above: a write failed part-way; its IDs were not sent";

struct Record {
  std::uint64_t incarnation = 0;
  std::uint64_t datacenter = 0;
  std::uint64_t worker = 0;
  Id first = 0;
  Id last = 0;
};

// 16 lower-case hex digits.
std::string format_incarnation(std::uint64_t incarnation);

// Appends one record line, '\n' included. Allocates only if `out` must grow.
void append_record(std::string& out, const Record& record);

// The header line, '\n' included.
std::string header(std::uint64_t incarnation, std::chrono::milliseconds started, long pid,
                   std::uint64_t datacenter, std::uint64_t worker, const Layout& layout);

// A record line without its '\n'; kInvalidArgument saying what is wrong.
Result<Record> parse_record(std::string_view line);

// `text` cut to 60 characters ("..." after), for messages that quote a bad line.
std::string excerpt(std::string_view text);

// For a header line, the layout it names (describe() of the server's
// layout); nullopt for any other line.
std::optional<std::string_view> header_layout(std::string_view line);

}  // namespace snowid::audit
