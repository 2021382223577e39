// snowidd's audit log options (audit_log.h) and their rows in the option table.
#pragma once

#include <string>

#include "option_rows.h"

namespace snowid::server {

struct AuditOptions {
  // A record of every block of IDs issued, written before the response.
  // Empty: off.
  std::string log;
  bool fsync = false;
};

inline OptionRows<AuditOptions> audit_rows() {
  return {
      {"audit_log", option::text(&AuditOptions::log), option::shown(&AuditOptions::log), {}},
      {"audit_fsync",
       option::boolean(&AuditOptions::fsync),
       option::shown(&AuditOptions::fsync),
       {}},
  };
}

}  // namespace snowid::server
