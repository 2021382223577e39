#include "mariadb_process.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "certificates.h"

namespace snowid::test {
namespace {

const std::string kServer = "/usr/sbin/mariadbd";
const std::string kInstall = "/usr/bin/mariadb-install-db";
const std::string kClient = "/usr/bin/mariadb";

std::string describe(const std::string& what, const ProcessResult& result) {
  return what + " failed (exit " + std::to_string(result.exit_code) +
         (result.timed_out ? ", timed out" : "") + "): " + result.err + result.out;
}

}  // namespace

bool MariadbProcess::available() {
  return std::filesystem::exists(kServer) && std::filesystem::exists(kInstall) &&
         std::filesystem::exists(kClient);
}

MariadbProcess::MariadbProcess() {
  port_ = free_loopback_ports(1).front();
  std::vector<std::string> install = {kInstall, "--no-defaults", "--datadir=" + dir_.file("data"),
                                      "--auth-root-authentication-method=normal", "--skip-test-db"};
  // mariadbd refuses to run as root unless told to.
  if (::geteuid() == 0) install.push_back("--user=root");
  const ProcessResult installed = run_process(install, {}, std::chrono::seconds{120});
  if (installed.exit_code != 0) {
    error_ = describe("mariadb-install-db", installed);
    return;
  }
  try {
    make_self_signed_certificate(dir_.path(), "server", "127.0.0.1");
  } catch (const std::exception& e) {
    error_ = e.what();
    return;
  }
  if (!start()) return;
  const std::string password = kPassword;
  const std::string setup =
      "CREATE DATABASE snowid; "
      "CREATE USER 'snowid'@'127.0.0.1' IDENTIFIED BY '" +
      password + "'; " + "GRANT ALL ON snowid.* TO 'snowid'@'127.0.0.1'; " +
      "CREATE USER 'tls'@'127.0.0.1' IDENTIFIED BY '" + password + "' REQUIRE SSL; " +
      "GRANT ALL ON snowid.* TO 'tls'@'127.0.0.1';";
  const ProcessResult created =
      run_process({kClient, "--no-defaults", "--socket=" + dir_.file("mariadb.sock"), "-u", "root",
                   "-e", setup});
  if (created.exit_code != 0) {
    error_ = describe("creating the snowid account", created);
    stop();
  }
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
                                   "--ssl-key=" + dir_.file("server-key.pem")};
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

bool MariadbProcess::sql(const std::string& statements, std::string* output) {
  const ProcessResult result =
      run_process({kClient, "--no-defaults", "--socket=" + dir_.file("mariadb.sock"), "-u", "root",
                   "--batch", "--skip-column-names", "-D", "snowid", "-e", statements});
  if (output != nullptr) *output = result.out;
  if (result.exit_code != 0) error_ = describe("mariadb", result);
  return result.exit_code == 0;
}

}  // namespace snowid::test
