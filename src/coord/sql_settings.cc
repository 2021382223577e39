#include "sql_settings.h"

#include "coordinator_options.h"

namespace snowid {
namespace {

using ParseEndpoints = Result<std::vector<std::string>> (*)(std::string_view);

// The row `name` of a section whose URL is its `url` member.
template <typename Settings>
OptionRows<Settings> url_rows(const char* name, ParseEndpoints parse) {
  return {
      {name,
       option::checked_text(&Settings::url, parse),
       [](const Settings& s) { return hide_sql_password(s.url); },
       {}},
  };
}

}  // namespace

OptionRows<PostgresSettings> postgres_endpoint_rows() {
  return url_rows<PostgresSettings>("postgres_url", parse_postgres_endpoints);
}

OptionRows<MysqlSettings> mysql_endpoint_rows() {
  return url_rows<MysqlSettings>("mysql_url", parse_mysql_endpoints);
}

}  // namespace snowid
