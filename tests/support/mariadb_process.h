// A throw-away MariaDB server for tests: mariadb-install-db in a temporary
// directory, one mariadbd on a free loopback port (and a socket in that
// directory), with password authentication on: the database `snowid` and
// the accounts snowid@127.0.0.1 and tls@127.0.0.1 (REQUIRE SSL), both with
// password kPassword, that own it. TLS with a self-signed certificate for
// 127.0.0.1 (ca_file()). The test administers it as root over the socket
// (mariadb client).
//
// Replication: a primary started with its binary log on (GTID), a replica
// that follows it from the log's start (so it gets the database and the
// accounts from there), read-only to those accounts, acknowledging each
// transaction before the primary's commit returns (semi-sync, AFTER_SYNC,
// never falling back to asynchronous within the hour), and its promotion.
//
// The server is stopped by its pid (SIGTERM, then waited for) and the
// directory removed at destruction.
#pragma once

#include <memory>
#include <string>

#include "subprocess.h"

namespace snowid::test {

class MariadbProcess {
 public:
  static constexpr const char* kPassword = "s3cret-pw";

  // Creates the data directory and starts the server; check started() and error().
  // With `binlog`, every change is logged (ROW, GTID) for replicas to follow.
  explicit MariadbProcess(bool binlog = false);
  // A semi-synchronous replica of `primary` (made with binlog): started,
  // caught up and counted by the primary as its semi-sync client; check
  // started() and error().
  explicit MariadbProcess(MariadbProcess& primary);
  ~MariadbProcess();
  MariadbProcess(const MariadbProcess&) = delete;
  MariadbProcess& operator=(const MariadbProcess&) = delete;

  // True if the MariaDB server and client are installed (and not named by
  // SNOWID_TEST_PRETEND_MISSING, missing.h); otherwise the constructors fail
  // with kMissing as error().
  static bool available();
  static constexpr const char* kMissing =
      "MariaDB is not installed (Debian packages mariadb-server, mariadb-client)";

  bool started() const { return server_ != nullptr; }
  const std::string& error() const { return error_; }
  // The server's self-signed certificate: the CA file a client trusts.
  std::string ca_file() const { return dir_.file("server.pem"); }
  // The socket root's client connects to.
  std::string socket() const { return dir_.file("mariadb.sock"); }
  int port() const { return port_; }
  int pid() const { return server_ != nullptr ? server_->pid() : -1; }
  // mysql://snowid:PASSWORD@127.0.0.1:PORT/snowid, then `query` ("?layout=leaf").
  std::string url(const std::string& query = "") const;

  // Stops the server (SIGTERM to its pid, waited for) and starts it again on
  // the same port; start() waits until it answers (false, see error(), if not).
  void stop();
  bool start();
  // SIGKILL to the server, waited for: a crash.
  void kill();
  // A replica applies all it received, stops replicating for good and
  // accepts writes (STOP SLAVE; RESET SLAVE ALL; read_only OFF).
  bool promote();

  // Runs SQL as root in database snowid (mariadb client, batch mode, no
  // column names); returns its output (error() says why on failure).
  bool sql(const std::string& statements, std::string* output = nullptr);
  // A backup and its restore, as an operator makes them: mariadb-dump of
  // `database` (with DROP TABLE statements) into `file`, and the mariadb
  // client reading it back into the live server.
  bool dump(const std::string& database, const std::string& file);
  bool restore(const std::string& database, const std::string& file);

 private:
  // mariadb-install-db and the certificate, then start().
  bool install();
  // Runs SQL as root in `database` (none if empty).
  bool sql_in(const std::string& database, const std::string& statements,
              std::string* output = nullptr);
  // Follows `primary` from its first GTID, semi-synchronously.
  bool follow(MariadbProcess& primary);
  // The field `name` of SHOW SLAVE STATUS ("" if none).
  std::string slave_status(const std::string& name);

  TempDir dir_;
  int port_ = 0;
  bool binlog_ = false;
  bool replica_ = false;
  std::unique_ptr<BackgroundProcess> server_;
  std::string error_;
};

}  // namespace snowid::test
