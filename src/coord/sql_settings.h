// snowidd's sections of the SQL coordinators (coordinator = "postgres",
// coordinator = "mysql"): the URL an operator sets, its row in the option
// table, and how it becomes the store's options (sql_coordinator.h).
#pragma once

#include <string>

#include "option_rows.h"
#include "sql_coordinator.h"

namespace snowid {

struct CoordinatorSetup;

struct PostgresSettings {
  // A libpq URL (postgresql://user[:password]@host[:port]/database[?...]).
  std::string url = "postgresql://snowid@127.0.0.1:5432/snowid";
};

struct MysqlSettings {
  // mysql://user[:password]@host[:port]/database[?password_file=PATH&ssl_ca=PATH]
  std::string url = "mysql://snowid@127.0.0.1:3306/snowid";
};

// The rows of the option table: postgres_url, mysql_url (shown with the
// password hidden).
OptionRows<PostgresSettings> postgres_endpoint_rows();
OptionRows<MysqlSettings> mysql_endpoint_rows();

}  // namespace snowid
