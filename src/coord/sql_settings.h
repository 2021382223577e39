// snowidd's sections of the SQL coordinators (coordinator = "postgres",
// coordinator = "mysql"): the URL an operator sets, its row in the option
// table, and how it becomes the store's options (sql_coordinator.h).
#pragma once

#include <memory>
#include <string>

#include "option_rows.h"
#include "snowid/coordinator.h"
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

// What validate() checks beyond each option's own syntax, and the
// coordinators the table makes.
Status check_postgres_setup(const CoordinatorSetup& setup);
Result<std::unique_ptr<Coordinator>> make_postgres_coordinator(const CoordinatorSetup& setup);
Status check_mysql_setup(const CoordinatorSetup& setup);
Result<std::unique_ptr<Coordinator>> make_mysql_coordinator(const CoordinatorSetup& setup);

}  // namespace snowid
