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

// The store's options for `setup`, its URL parsed by `parse`.
template <typename Options>
Result<Options> sql_options(const CoordinatorSetup& setup, const std::string& url,
                            ParseEndpoints parse) {
  auto endpoints = parse(url);
  if (!endpoints.ok()) return endpoints.error();
  Options o;
  static_cast<LeaseOptions&>(o) = lease_options(setup);
  o.endpoints = std::move(*endpoints);
  o.endpoints_text = hide_sql_password(url);
  return o;
}

template <typename Options>
Status check_sql_setup(const CoordinatorSetup& setup, const std::string& url,
                       ParseEndpoints parse) {
  auto options = sql_options<Options>(setup, url, parse);
  if (!options.ok()) return options.error();
  return check_lease_setup(setup);
}

}  // namespace

OptionRows<PostgresSettings> postgres_endpoint_rows() {
  return url_rows<PostgresSettings>("postgres_url", parse_postgres_endpoints);
}

OptionRows<MysqlSettings> mysql_endpoint_rows() {
  return url_rows<MysqlSettings>("mysql_url", parse_mysql_endpoints);
}

Status check_postgres_setup(const CoordinatorSetup& setup) {
  return check_sql_setup<PostgresOptions>(setup, setup.options.postgres.url,
                                          parse_postgres_endpoints);
}

Result<std::unique_ptr<Coordinator>> make_postgres_coordinator(const CoordinatorSetup& setup) {
  auto options =
      sql_options<PostgresOptions>(setup, setup.options.postgres.url, parse_postgres_endpoints);
  if (!options.ok()) return options.error();
  return make_postgres_coordinator(*options);
}

Status check_mysql_setup(const CoordinatorSetup& setup) {
  return check_sql_setup<MysqlOptions>(setup, setup.options.mysql.url, parse_mysql_endpoints);
}

Result<std::unique_ptr<Coordinator>> make_mysql_coordinator(const CoordinatorSetup& setup) {
  auto options = sql_options<MysqlOptions>(setup, setup.options.mysql.url, parse_mysql_endpoints);
  if (!options.ok()) return options.error();
  return make_mysql_coordinator(*options);
}

}  // namespace snowid
