// `snowid bench grpc`: load on a running snowidd over gRPC, for measuring,
// not for testing. `concurrency` calls are kept in flight over `channels`
// HTTP/2 connections (each call starts the next when it completes) until the
// duration ends; then the report gives calls/s, IDs/s, latency percentiles
// and failures by status code. With `verify`, every ID received is kept and
// checked for duplicates at the end. With `stream`, each of the calls in
// flight is a StreamIds stream instead.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "load_report.h"
#include "snowid/error.h"

namespace snowid::cli {

struct GrpcBenchOptions {
  std::string target = "127.0.0.1:9090";
  std::chrono::milliseconds duration{5000};
  int concurrency = 64;
  int channels = 2;
  std::uint32_t batch = 0;  // 0: unary NextId; otherwise NextIds(batch)
  // StreamIds instead of NextIds: `concurrency` streams, each asking for
  // `batch` IDs per message, one message in flight per stream.
  bool stream = false;
  std::string bearer_token;
  std::string tls_ca_file;  // empty: plain text
  bool verify = false;
};

using GrpcBenchReport = LoadReport;

// Runs the load. Errors: bad options (kInvalidArgument), or no gRPC server
// at the target completing a connection (kUnavailable).
Result<GrpcBenchReport> run_grpc_bench(const GrpcBenchOptions& options);

// The report as the CLI prints it.
std::string format_report(const GrpcBenchOptions& options, const GrpcBenchReport& report);

}  // namespace snowid::cli
