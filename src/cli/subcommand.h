// The one shape of a snowid subcommand. Each top-level subcommand (gen,
// decode, cluster, state, ...) is a class derived from Subcommand whose
// constructor adds its CLI11 subcommand, options and own subcommands to the
// app; main.cc lists every one in a single table, parses the command line
// once, and runs the one that was chosen. A new subcommand is a new class
// and one table row.
//
// Contract: construction only declares options (no I/O); parsed() and run()
// are called after CLI11 has parsed the command line, run() only if
// parsed(). run() returns the exit code (exit_codes.h: 0 done, 1 failed,
// 2 bad input), errors as one line on stderr. Single-threaded: the CLI
// parses and runs on its main thread.
#pragma once

namespace snowid::cli {

class Subcommand {
 public:
  virtual ~Subcommand() = default;
  // Whether the command line chose this subcommand.
  virtual bool parsed() const = 0;
  // Runs the chosen subcommand; returns the exit code.
  virtual int run() const = 0;
};

}  // namespace snowid::cli
