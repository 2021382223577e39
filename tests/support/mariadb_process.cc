#include "mariadb_process.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "certificates.h"
#include "missing.h"

namespace snowid::test {
namespace {

const std::string kServer = "/usr/sbin/mariadbd";
const std::string kInstall = "/usr/bin/mariadb-install-db";
const std::string kClient = "/usr/bin/mariadb";
const std::string kDump = "/usr/bin/mariadb-dump";

std::string describe(const std::string& what, const ProcessResult& result) {
  return what + " failed (exit " + std::to_string(result.exit_code) +
         (result.timed_out ? ", timed out" : "") + "): " + result.err + result.out;
}

}  // namespace

bool MariadbProcess::available() {
  if (pretended_missing("mariadb")) return false;
  return std::filesystem::exists(kServer) && std::filesystem::exists(kInstall) &&
         std::filesystem::exists(kClient);
}

MariadbProcess::MariadbProcess(bool binlog) : binlog_(binlog) {
  if (!install()) return;
  const std::string password = kPassword;
  std::string setup =
      "CREATE DATABASE snowid; "
      "CREATE USER 'snowid'@'127.0.0.1' IDENTIFIED BY '" +
      password + "'; " + "GRANT ALL ON snowid.* TO 'snowid'@'127.0.0.1'; " +
      "CREATE USER 'tls'@'127.0.0.1' IDENTIFIED BY '" + password + "' REQUIRE SSL; " +
      "GRANT ALL ON snowid.* TO 'tls'@'127.0.0.1';";
  if (binlog_) {
    setup += "CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY '" + password +
             "'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1';";
  }
  if (!sql_in("", setup)) {
    error_ = "creating the snowid account: " + error_;
    stop();
  }
}

MariadbProcess::MariadbProcess(MariadbProcess& primary) : replica_(true) {
  if (install() && !follow(primary)) stop();
}

bool MariadbProcess::install() {
  if (!available()) {
    error_ = kMissing;
    return false;
  }
  port_ = free_loopback_ports(1).front();
  std::vector<std::string> argv = {kInstall, "--no-defaults", "--datadir=" + dir_.file("data"),
                                   "--auth-root-authentication-method=normal", "--skip-test-db"};
  // mariadbd refuses to run as root unless told to.
  if (::geteuid() == 0) argv.push_back("--user=root");
  const ProcessResult installed = run_process(argv, {}, std::chrono::seconds{120});
  if (installed.exit_code != 0) {
    error_ = describe("mariadb-install-db", installed);
    return false;
  }
  try {
    make_self_signed_certificate(dir_.path(), "server", "127.0.0.1");
  } catch (const std::exception& e) {
    error_ = e.what();
    return false;
  }
  return start();
}

// Semi-sync on the primary first (it takes no writes meanwhile), so that the
// replica's first connection is a semi-sync one.
bool MariadbProcess::follow(MariadbProcess& primary) {
  std::string position, waited, clients;
  if (!primary.sql_in("",
                      "SET GLOBAL rpl_semi_sync_master_enabled = ON; "
                      "SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC; "
                      "SET GLOBAL rpl_semi_sync_master_timeout = 3600000; "
                      "SELECT @@gtid_binlog_pos",
                      &position)) {
    error_ = "primary: " + primary.error();
    return false;
  }
  position = position.substr(0, position.find('\n'));
  if (!sql_in("", "SET GLOBAL rpl_semi_sync_slave_enabled = ON; "
                  "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = " +
                      std::to_string(primary.port()) +
                      ", MASTER_USER = 'repl', MASTER_PASSWORD = '" + kPassword +
                      "', MASTER_USE_GTID = slave_pos; START SLAVE; "
                      "SELECT MASTER_GTID_WAIT('" + position + "', 30)",
              &waited)) {
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  while (std::chrono::steady_clock::now() < deadline &&
         primary.sql_in("", "SHOW STATUS LIKE 'Rpl_semi_sync_master_clients'", &clients) &&
         clients != "Rpl_semi_sync_master_clients\t1\n") {
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  if (waited != "0\n" || clients != "Rpl_semi_sync_master_clients\t1\n") {
    error_ = "the replica did not catch up (" + waited + ") or is no semi-sync client (" +
             clients + "): " + slave_status("Last_IO_Error") + slave_status("Last_SQL_Error");
    return false;
  }
  return true;
}

MariadbProcess::~MariadbProcess() { stop(); }

std::string MariadbProcess::url(const std::string& query) const {
  return "mysql://snowid:" + std::string(kPassword) + "@127.0.0.1:" + std::to_string(port_) +
         "/snowid" + query;
}

bool MariadbProcess::start() {
  std::vector<std::string> argv = {kServer,
                                   "--no-defaults",
                                   "--datadir=" + dir_.file("data"),
                                   "--socket=" + dir_.file("mariadb.sock"),
                                   "--pid-file=" + dir_.file("mariadb.pid"),
                                   "--log-error=" + dir_.file("error.log"),
                                   "--tmpdir=" + dir_.path(),
                                   "--port=" + std::to_string(port_),
                                   "--bind-address=127.0.0.1",
                                   "--skip-name-resolve",
                                   "--innodb-buffer-pool-size=32M",
                                   "--innodb-flush-log-at-trx-commit=2",
                                   "--max-connections=60",
                                   "--ssl-cert=" + dir_.file("server.pem"),
                                   "--ssl-key=" + dir_.file("server-key.pem"),
                                   "--server-id=" + std::to_string(port_),
                                   "--relay-log=" + dir_.file("relay")};
  if (binlog_) argv.insert(argv.end(), {"--log-bin=" + dir_.file("binlog"), "--binlog-format=ROW"});
  if (replica_) argv.push_back("--read-only");
  if (::geteuid() == 0) argv.push_back("--user=root");
  server_ = std::make_unique<BackgroundProcess>(argv, dir_.file("server.out"));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{60};
  while (std::chrono::steady_clock::now() < deadline) {
    const ProcessResult ping =
        run_process({kClient, "--no-defaults", "--socket=" + dir_.file("mariadb.sock"), "-u",
                     "root", "-e", "SELECT 1"},
                    {}, std::chrono::seconds{10});
    if (ping.exit_code == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{200});
  }
  error_ = "mariadbd did not answer within 60 s: " + read_file(dir_.file("error.log"));
  stop();
  return false;
}

void MariadbProcess::stop() {
  if (server_ == nullptr) return;
  server_->signal(SIGTERM);
  server_->wait(std::chrono::seconds{60});  // SIGKILL after that
  server_.reset();
}

void MariadbProcess::kill() {
  if (server_ == nullptr) return;
  server_->signal(SIGKILL);
  server_->wait(std::chrono::seconds{10});
  server_.reset();
}

bool MariadbProcess::promote() {
  // What the replica received but had not applied yet is applied first:
  // with semi-sync that includes every commit the primary acknowledged.
  if (!sql_in("", "STOP SLAVE IO_THREAD")) return false;
  const std::string received = slave_status("Gtid_IO_Pos");
  std::string waited;
  if (!sql_in("", "SELECT MASTER_GTID_WAIT('" + received + "', 30)", &waited)) return false;
  if (waited != "0\n") {
    error_ = "the replica did not apply up to " + received + ": " + slave_status("Last_SQL_Error");
    return false;
  }
  return sql_in("",
                "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL rpl_semi_sync_slave_enabled = OFF; "
                "SET GLOBAL read_only = OFF");
}

std::string MariadbProcess::slave_status(const std::string& name) {
  const ProcessResult result =
      run_process({kClient, "--no-defaults", "--socket=" + socket(), "-u", "root", "--vertical",
                   "-e", "SHOW SLAVE STATUS"});
  const std::string key = " " + name + ": ";
  const std::size_t at = result.out.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return result.out.substr(start, result.out.find('\n', start) - start);
}

bool MariadbProcess::sql(const std::string& statements, std::string* output) {
  return sql_in("snowid", statements, output);
}

bool MariadbProcess::sql_in(const std::string& database, const std::string& statements,
                            std::string* output) {
  std::vector<std::string> argv = {kClient,   "--no-defaults", "--socket=" + socket(),
                                   "-u",      "root",          "--batch",
                                   "--skip-column-names"};
  if (!database.empty()) argv.insert(argv.end(), {"-D", database});
  argv.insert(argv.end(), {"-e", statements});
  const ProcessResult result = run_process(argv);
  if (output != nullptr) *output = result.out;
  if (result.exit_code != 0) error_ = describe("mariadb", result);
  return result.exit_code == 0;
}

bool MariadbProcess::dump(const std::string& database, const std::string& file) {
  const ProcessResult result = run_process(
      {kDump, "--no-defaults", "--socket=" + socket(), "-u", "root", "--single-transaction",
       database});
  if (result.exit_code != 0) {
    error_ = describe("mariadb-dump", result);
    return false;
  }
  std::ofstream out(file, std::ios::trunc);
  out << result.out;
  out.close();
  if (!out) error_ = "cannot write " + file;
  return static_cast<bool>(out);
}

bool MariadbProcess::restore(const std::string& database, const std::string& file) {
  // The client's `source` goes on past a failed statement: abort instead, so
  // that a restore that did not apply is a failure, not a silent no-op.
  const ProcessResult result =
      run_process({kClient, "--no-defaults", "--socket=" + socket(), "-u", "root", "--batch",
                   "--abort-source-on-error", "-D", database, "-e", "source " + file});
  if (result.exit_code != 0) error_ = describe("mariadb < dump", result);
  return result.exit_code == 0;
}

}  // namespace snowid::test
