#include "postgres_process.h"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "missing.h"
#include "orphan_guard.h"

namespace snowid::test {
namespace {

const std::string kBin = "/usr/lib/postgresql/15/bin/";

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string describe(const std::string& what, const ProcessResult& result) {
  return what + " failed (exit " + std::to_string(result.exit_code) +
         (result.timed_out ? ", timed out" : "") + "): " + result.err + result.out;
}

}  // namespace

bool PostgresProcess::available() {
  if (pretended_missing("postgres")) return false;
  return std::filesystem::exists(kBin + "initdb") && std::filesystem::exists(kBin + "pg_ctl");
}

PostgresProcess::PostgresProcess() : data_dir_(dir_.file("data")) {
  if (!available()) {
    error_ = kMissing;
    return;
  }
  if (!own_directory()) return;
  const ProcessResult init =
      run_as_owner({kBin + "initdb", "-D", data_dir_, "-U", "postgres", "-A", "trust", "--no-sync",
                    "--no-locale", "-E", "UTF8", "--no-instructions"});
  if (init.exit_code != 0) {
    error_ = describe("initdb", init);
    return;
  }
  start();
}

PostgresProcess::PostgresProcess(const PostgresProcess& primary, const std::string& name)
    : data_dir_(dir_.file("data")) {
  if (!own_directory()) return;
  // -R writes standby.signal and primary_conninfo (with application_name).
  const ProcessResult copied = run_as_owner(
      {kBin + "pg_basebackup", "-D", data_dir_, "-R", "-X", "stream", "-c", "fast", "--no-sync",
       "-d",
       "host=127.0.0.1 port=" + std::to_string(primary.port()) +
           " user=postgres application_name=" + name});
  if (copied.exit_code != 0) {
    error_ = describe("pg_basebackup", copied);
    return;
  }
  start();
}

// initdb and the server refuse root: as root, the directory goes to postgres.
bool PostgresProcess::own_directory() {
  if (::geteuid() == 0) {
    const passwd* owner = ::getpwnam("postgres");
    if (owner == nullptr) {
      error_ = "running as root and there is no postgres user to own the cluster";
      return false;
    }
    if (::chown(dir_.path().c_str(), owner->pw_uid, owner->pw_gid) != 0) {
      error_ = "cannot chown " + dir_.path() + " to postgres";
      return false;
    }
    as_postgres_user_ = true;
  }
  port_ = free_loopback_port();
  return true;
}

PostgresProcess::~PostgresProcess() {
  if (running_) stop(true);
}

std::string PostgresProcess::url() const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/postgres";
}

ProcessResult PostgresProcess::run_as_owner(std::vector<std::string> argv) {
  if (as_postgres_user_) argv.insert(argv.begin(), {"/usr/sbin/runuser", "-u", "postgres", "--"});
  return run_process(argv, {}, std::chrono::seconds{60});
}

bool PostgresProcess::start() {
  const std::string options = "-p " + std::to_string(port_) + " -k " + dir_.path() +
                              " -c listen_addresses=127.0.0.1 -c fsync=off"
                              " -c full_page_writes=off -c max_connections=" +
                              std::to_string(max_connections_);
  const ProcessResult started =
      run_as_owner({kBin + "pg_ctl", "-D", data_dir_, "-l", dir_.file("server.log"), "-w", "-t",
                    "30", "-o", options, "start"});
  running_ = started.exit_code == 0;
  if (!running_) error_ = describe("pg_ctl start", started) + read_file(dir_.file("server.log"));
  // The postmaster is a daemon, not this program's child: its pid is the
  // first line of postmaster.pid.
  std::ifstream pid_file(data_dir_ + "/postmaster.pid");
  if (running_ && pid_file >> postmaster_ && postmaster_ > 0) watch_child(postmaster_);
  return running_;
}

bool PostgresProcess::allow_connections(int count) {
  max_connections_ = count;
  return stop(/*immediate=*/false) && start();
}

bool PostgresProcess::stop(bool immediate) {
  const ProcessResult stopped = run_as_owner({kBin + "pg_ctl", "-D", data_dir_, "-w", "-t", "30",
                                              "-m", immediate ? "immediate" : "fast", "stop"});
  if (stopped.exit_code != 0) {
    error_ = describe("pg_ctl stop", stopped);
    return false;
  }
  running_ = false;
  if (postmaster_ > 0) forget_child(postmaster_);
  postmaster_ = -1;
  return true;
}

bool PostgresProcess::require_synchronous_standby(const std::string& name) {
  // ALTER SYSTEM runs outside a transaction: one statement per psql call.
  return psql("ALTER SYSTEM SET synchronous_standby_names = '" + name + "'") &&
         psql("ALTER SYSTEM SET synchronous_commit = 'on'") && psql("SELECT pg_reload_conf()") &&
         wait_for("SELECT sync_state FROM pg_stat_replication WHERE application_name = '" + name +
                      "' AND state = 'streaming'",
                  "sync");
}

bool PostgresProcess::promote() {
  const ProcessResult promoted =
      run_as_owner({kBin + "pg_ctl", "-D", data_dir_, "-w", "-t", "30", "promote"});
  if (promoted.exit_code != 0) {
    error_ = describe("pg_ctl promote", promoted);
    return false;
  }
  return wait_for("SELECT pg_is_in_recovery()", "f");
}

bool PostgresProcess::wait_for(const std::string& sql, const std::string& expected) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
  std::string out;
  while (std::chrono::steady_clock::now() < deadline) {
    if (psql(sql, &out) && out.substr(0, out.find('\n')) == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
  error_ = "'" + sql + "' did not print '" + expected + "' within 30 s (last: " + out + ")";
  return false;
}

bool PostgresProcess::psql(const std::string& sql, std::string* output) {
  const ProcessResult result = run_process(
      {kBin + "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(), "-c", sql});
  if (output != nullptr) *output = result.out;
  if (result.exit_code != 0) error_ = describe("psql", result);
  return result.exit_code == 0;
}

bool PostgresProcess::dump(const std::string& file) {
  const ProcessResult result = run_process(
      {kBin + "pg_dump", "--clean", "--if-exists", "--no-owner", "-f", file, "-d", url()});
  if (result.exit_code != 0) error_ = describe("pg_dump", result);
  return result.exit_code == 0;
}

bool PostgresProcess::restore(const std::string& file) {
  const ProcessResult result =
      run_process({kBin + "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url(), "-f", file});
  if (result.exit_code != 0) error_ = describe("psql -f", result);
  return result.exit_code == 0;
}

}  // namespace snowid::test
