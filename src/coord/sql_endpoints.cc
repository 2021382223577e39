// The SQL stores' endpoints as operators write them (sql_coordinator.h): a
// database URL, or HOST:PORT entries; and the same text with its passwords
// hidden, for the option table, /v1/info and the logs.
#include <fmt/format.h>

#include "database_url.h"
#include "leased_claim.h"
#include "sql_connection.h"
#include "sql_coordinator.h"
#include "sql_dialect.h"

namespace snowid {
namespace {

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

using CheckUrl = Status (*)(const std::string&);

// One URL (read whole by `check_url`, as the connection will read it) or
// HOST:PORT entries.
Result<std::vector<std::string>> parse_sql_endpoints(std::string_view text, std::string_view store,
                                                     std::vector<std::string_view> schemes,
                                                     CheckUrl check_url) {
  for (std::string_view scheme : schemes) {
    if (!starts_with(text, scheme)) continue;
    const auto authority = database_url_authority(text);
    if (!authority || authority->libpq_host() >= authority->end) {
      return invalid_argument(fmt::format("bad {} URL: no host after {}", store, scheme));
    }
    std::string url(text);
    if (Status checked = check_url(url); !checked.ok()) return checked.error();
    return std::vector<std::string>{std::move(url)};
  }
  if (text.find("://") != std::string_view::npos) {
    return invalid_argument(fmt::format("bad {} URL: expected {}... or HOST:PORT[,HOST:PORT...]",
                                        store, schemes.front()));
  }
  return coord::parse_host_port_list(text, store, {});
}

}  // namespace

Result<std::vector<std::string>> parse_postgres_endpoints(std::string_view text) {
  return parse_sql_endpoints(text, "PostgreSQL", {"postgresql://", "postgres://"},
                             sql::check_postgres_url);
}

Result<std::vector<std::string>> parse_mysql_endpoints(std::string_view text) {
  return parse_sql_endpoints(text, "MySQL", {"mysql://", "mariadb://"}, coord::check_mysql_url);
}

std::string hide_sql_password(std::string_view text) {
  std::string out(text);
  const auto authority = database_url_authority(out);
  if (authority && authority->has_user_info()) {
    const std::size_t colon = out.find(':', authority->begin);
    if (colon < authority->last_at) out.replace(colon + 1, authority->last_at - colon - 1, "***");
  }
  // A password given as a parameter: ...?password=... or &password=...
  for (std::size_t at = out.find("password="); at != std::string::npos;
       at = out.find("password=", at + 1)) {
    if (at == 0 || (out[at - 1] != '?' && out[at - 1] != '&')) continue;
    const std::size_t start = at + 9;
    const std::size_t end = std::min(out.find('&', start), out.size());
    out.replace(start, end - start, "***");
  }
  return out;
}

}  // namespace snowid
