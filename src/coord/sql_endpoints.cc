// The SQL stores' endpoints as operators write them (sql_coordinator.h): a
// database URL (a MySQL one naming several hosts is one endpoint per host),
// or HOST:PORT entries; and the same text with its passwords
// hidden, for the option table, /v1/info and the logs.
#include <fmt/format.h>

#include <algorithm>

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

// A URL naming several hosts (user@h1:p1,h2:p2/db) as one URL per host, each
// with the same user info, database and parameters; `url` itself if it names one.
Result<std::vector<std::string>> one_url_per_host(std::string_view url, std::string_view store,
                                                  const DatabaseUrlAuthority& authority) {
  const std::size_t hosts = authority.has_user_info() ? authority.last_at + 1 : authority.begin;
  std::vector<std::string> urls;
  for (std::size_t at = hosts; at <= authority.end;) {
    const std::size_t comma = std::min(url.find(',', at), authority.end);
    if (comma == at) return invalid_argument(fmt::format("bad {} URL: an empty host", store));
    urls.push_back(fmt::format("{}{}{}", url.substr(0, hosts), url.substr(at, comma - at),
                               url.substr(authority.end)));
    at = comma + 1;
  }
  return urls;
}

// One URL or HOST:PORT entries. Each URL is read whole by `check_url`, as
// the connection will read it. libpq reads a URL with several hosts itself;
// the MySQL store's URL names one, so `split_hosts` makes one endpoint of
// each host.
Result<std::vector<std::string>> parse_sql_endpoints(std::string_view text, std::string_view store,
                                                     std::vector<std::string_view> schemes,
                                                     CheckUrl check_url, bool split_hosts = false) {
  if (has_control_character(text)) {
    return invalid_argument(fmt::format(
        "bad {} URL: it holds a control character (tab, newline, NUL)", store));
  }
  for (std::string_view scheme : schemes) {
    if (!starts_with(text, scheme)) continue;
    const auto authority = database_url_authority(text);
    if (!authority || authority->libpq_host() >= authority->end) {
      return invalid_argument(fmt::format("bad {} URL: no host after {}", store, scheme));
    }
    auto urls = split_hosts ? one_url_per_host(text, store, *authority)
                            : Result<std::vector<std::string>>(std::vector{std::string(text)});
    if (!urls.ok()) return urls.error();
    for (const std::string& url : *urls) {
      if (Status checked = check_url(url); !checked.ok()) return checked.error();
    }
    return urls;
  }
  if (text.find("://") != std::string_view::npos) {
    return invalid_argument(fmt::format("bad {} URL: expected {}... or HOST:PORT[,HOST:PORT...]",
                                        store, schemes.front()));
  }
  // key=value connection strings are not read, and not echoed: they may hold
  // a password.
  if (text.find_first_of("= ") != std::string_view::npos) {
    return invalid_argument(fmt::format("bad {} endpoints: expected {}... or HOST:PORT[,HOST:PORT...]",
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
  return parse_sql_endpoints(text, "MySQL", {"mysql://", "mariadb://"}, coord::check_mysql_url,
                             true);
}

std::string hide_sql_password(std::string_view text) { return hide_url_passwords(text); }

}  // namespace snowid
