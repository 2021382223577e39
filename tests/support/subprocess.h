// Runs a real program for a test: captures stdout, stderr and the exit code,
// and kills it if it outlives its time limit, so a hang fails the test rather
// than the suite.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace snowid::test {

struct ProcessResult {
  int exit_code = -1;      // -1 if killed by a signal
  int signal = 0;          // the signal that ended it, if any
  bool timed_out = false;
  std::string out;
  std::string err;
};

// Runs argv[0] (a path) with `argv`, extra environment `env`, stdin from /dev/null.
ProcessResult run_process(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {},
                          std::chrono::seconds limit = std::chrono::seconds{60});

// A program running in the background with stdout to a file (stderr to
// `stdout_path` + ".err"), killed with SIGKILL at destruction if still running.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& stdout_path);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  void signal(int sig);
  int pid() const { return pid_; }
  // Waits for the end; the exit code, -signal, or -1000 if `limit` passed (then killed).
  int wait(std::chrono::seconds limit = std::chrono::seconds{30});

 private:
  int pid_ = -1;
  bool reaped_ = false;
};

// The environment for a child process, as NAME=VALUE entries: this
// process's, with `env` added (replacing inherited entries of the same name)
// and without the test settings SNOWID_CHAOS_* and SNOWID_TEST_*, which are
// not snowidd options (snowidd refuses SNOWID_ variables it does not know).
std::vector<std::string> child_environment(const std::map<std::string, std::string>& env);

// The whole content of a file ("" if it cannot be read).
std::string read_file(const std::string& path);

// Copies the directory `from` with everything in it to `to`, replacing
// whatever `to` held (a backup of a server's files, or its restore). "" if
// done, else what failed.
std::string copy_directory(const std::string& from, const std::string& to);

// Splits text into lines without their '\n'.
std::vector<std::string> split_lines(const std::string& text);

// A fresh directory under $TMPDIR (or `parent`), removed with its contents
// on destruction.
class TempDir {
 public:
  TempDir();
  explicit TempDir(const std::string& parent);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A TCP connection to 127.0.0.1:`port` (close-on-exec); -1 if it fails.
// `receive_buffer`, if not 0, is set as SO_RCVBUF before connecting.
int connect_loopback(int port, int receive_buffer = 0);

// `count` distinct free TCP ports on 127.0.0.1 (released before returning:
// a server started at once binds them).
std::vector<int> free_loopback_ports(int count);

// The full path of `name` found on PATH, or "".
std::string find_program(const std::string& name);

}  // namespace snowid::test
