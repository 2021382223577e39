// etcd's own clock, read where etcd reports it: etcd reports no time in its
// gRPC answers, but its client URL (the same host:port, shared through cmux)
// also answers plain HTTP/1.1, and Go's net/http stamps every answer with a
// Date header (RFC 7231 IMF-fixdate, whole seconds). The claim uses it so
// that the created marker written after a loss does not rest on the
// claimer's clock alone (etcd_claim.cc, A STORE THAT LOST ITS DATA).
//
// Thread-safety: the functions share no state; any thread may call them.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "etcd_coordinator.h"
#include "snowid/error.h"

namespace snowid::coord {

// "Sun, 06 Nov 1994 08:49:37 GMT" (IMF-fixdate) as a moment; nullopt for
// anything else (the obsolete RFC 850 and asctime forms included, which
// etcd never sends).
std::optional<std::chrono::sys_seconds> parse_http_date(std::string_view text);

// The Date of the first member in options.endpoints that answers GET
// /version, over TLS with the options' CA and client certificate when a CA
// is set (as EtcdClient does). Each member gets options.request_timeout.
// kUnavailable naming every member's failure if none gave a readable Date.
Result<std::chrono::sys_seconds> etcd_server_time(const EtcdOptions& options);

}  // namespace snowid::coord
