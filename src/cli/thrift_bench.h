// `snowid bench thrift`: load on a running snowidd's Thrift listener (Twitter
// Snowflake's service) with the C++ client thrift-compiler generates, for
// measuring, not for testing. `connections` threads each call get_id on a
// connection of their own, one call after the other, until the duration
// ends; the report is `snowid bench grpc`'s.
#pragma once

#include <chrono>
#include <string>

#include "load_report.h"
#include "snowid/error.h"

namespace snowid::cli {

struct ThriftBenchOptions {
  std::string host = "127.0.0.1";
  int port = 7609;
  std::chrono::milliseconds duration{5000};
  int connections = 16;
  std::string agent = "bench";
  bool verify = false;
};

// Errors: bad options (kInvalidArgument), or no connection (kUnavailable).
Result<LoadReport> run_thrift_bench(const ThriftBenchOptions& options);

// The report as the CLI prints it.
std::string format_report(const ThriftBenchOptions& options, const LoadReport& report);

}  // namespace snowid::cli
