// A throw-away PostgreSQL 15 cluster for tests: initdb in a temporary
// directory, the server on a free loopback port with its socket in that
// directory, trust authentication for the `postgres` user. When the test runs
// as root (initdb refuses root) the cluster belongs to the `postgres` system
// user and every server command runs through `runuser -u postgres --`.
//
// Streaming replication: a standby made from a running server by
// pg_basebackup -R (its own directory and free port), the primary's commits
// made to wait for it (synchronous_standby_names, synchronous_commit = on),
// and its promotion.
//
// The server is stopped (immediate mode) and the directory removed at destruction.
#pragma once

#include <sys/types.h>

#include <string>

#include "subprocess.h"

namespace snowid::test {

class PostgresProcess {
 public:
  // Creates the cluster and starts the server; check started() and error().
  PostgresProcess();
  // A streaming standby of `primary` named `name` (its application_name):
  // pg_basebackup -R of the running primary, started read-only; check
  // started() and error().
  PostgresProcess(const PostgresProcess& primary, const std::string& name);
  ~PostgresProcess();
  PostgresProcess(const PostgresProcess&) = delete;
  PostgresProcess& operator=(const PostgresProcess&) = delete;

  // True if the PostgreSQL 15 binaries are installed (and not named by
  // SNOWID_TEST_PRETEND_MISSING, missing.h); otherwise the constructors fail
  // with kMissing as error().
  static bool available();
  static constexpr const char* kMissing =
      "PostgreSQL 15 is not installed (Debian package postgresql)";

  bool started() const { return running_; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  // The postmaster's pid while it runs (its backends are its children), else -1.
  pid_t postmaster_pid() const { return postmaster_; }
  // Restarts the server (fast shutdown) accepting up to `count` connections
  // (40 until then); false (see error()) on failure.
  bool allow_connections(int count);
  // postgresql://postgres@127.0.0.1:PORT/postgres
  std::string url() const;

  // Stops the server (`immediate`: like a crash, no checkpoint) and starts it
  // again on the same port. Both wait until done; false (see error()) on failure.
  bool stop(bool immediate = true);
  bool start();

  // Makes every commit wait until the standby `name` has flushed it
  // (synchronous_standby_names, synchronous_commit = on, reloaded), then waits
  // until the standby streams as synchronous (pg_stat_replication).
  bool require_synchronous_standby(const std::string& name);
  // pg_ctl promote on a standby; waits until it accepts writes.
  bool promote();

  // Runs SQL through psql; returns its output (error() says why on failure).
  bool psql(const std::string& sql, std::string* output = nullptr);

  // A backup and its restore, as an operator makes them: pg_dump of the
  // whole database (with DROP statements) into `file`, and psql -f `file`
  // run against the live server, which puts every table back as dumped.
  bool dump(const std::string& file);
  bool restore(const std::string& file);

 private:
  ProcessResult run_as_owner(std::vector<std::string> argv);
  bool own_directory();
  // Polls `sql` until it prints `expected` (at most 30 s).
  bool wait_for(const std::string& sql, const std::string& expected);

  TempDir dir_;
  std::string data_dir_;
  int port_ = 0;
  bool as_postgres_user_ = false;
  bool running_ = false;
  int max_connections_ = 40;
  pid_t postmaster_ = -1;  // from postmaster.pid while running, guarded by orphan_guard.h
  std::string error_;
};

}  // namespace snowid::test
