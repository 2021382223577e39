#include "thrift_bench.h"

#include <fmt/format.h>
#include <thrift/TApplicationException.h>
#include <thrift/protocol/TBinaryProtocol.h>
#include <thrift/transport/TBufferTransports.h>
#include <thrift/transport/TSocket.h>

#include <memory>
#include <thread>
#include <vector>

#include "Snowflake.h"

namespace snowid::cli {

namespace {

using Clock = std::chrono::steady_clock;

// One connection's calls; touched by its own thread only until joined.
struct Caller {
  std::uint64_t calls_ok = 0;
  std::map<std::string, std::uint64_t> failures;
  std::vector<std::int64_t> latencies_ns;
  std::vector<std::uint64_t> received;
  std::unique_ptr<snowid::thrift::SnowflakeClient> client;
  std::shared_ptr<apache::thrift::transport::TTransport> transport;
};

}  // namespace

Result<LoadReport> run_thrift_bench(const ThriftBenchOptions& options) {
  if (options.connections < 1 || options.connections > 1000) {
    return invalid_argument("--connections must be in 1..1000");
  }
  if (options.duration.count() < 1) return invalid_argument("--duration must be positive");
  std::vector<Caller> callers(static_cast<std::size_t>(options.connections));
  for (Caller& caller : callers) {
    auto socket = std::make_shared<apache::thrift::transport::TSocket>(options.host, options.port);
    socket->setRecvTimeout(10000);
    socket->setNoDelay(true);
    caller.transport = std::make_shared<apache::thrift::transport::TFramedTransport>(socket);
    caller.client = std::make_unique<snowid::thrift::SnowflakeClient>(
        std::make_shared<apache::thrift::protocol::TBinaryProtocol>(caller.transport));
    try {
      caller.transport->open();
    } catch (const apache::thrift::TException& e) {
      return Error{ErrorCode::kUnavailable, fmt::format("cannot connect to {}:{}: {}", options.host,
                                                        options.port, e.what())};
    }
  }
  const auto begin = Clock::now();
  const auto end = begin + options.duration;
  std::vector<std::thread> threads;
  for (Caller& caller : callers) {
    threads.emplace_back([&caller, &options, end] {
      for (auto now = Clock::now(); now < end;) {
        try {
          const auto id = caller.client->get_id(options.agent);
          ++caller.calls_ok;
          if (options.verify) caller.received.push_back(static_cast<std::uint64_t>(id));
        } catch (const apache::thrift::TApplicationException&) {
          ++caller.failures["application exception"];
        } catch (const apache::thrift::TException&) {
          ++caller.failures["connection lost"];
          return;
        }
        const auto after = Clock::now();
        caller.latencies_ns.push_back(
            std::chrono::duration_cast<std::chrono::nanoseconds>(after - now).count());
        now = after;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  LoadReport report;
  report.elapsed = Clock::now() - begin;
  std::vector<std::int64_t> latencies;
  std::vector<std::uint64_t> received;
  for (Caller& caller : callers) {
    report.calls_ok += caller.calls_ok;
    for (const auto& [kind, count] : caller.failures) report.failures[kind] += count;
    latencies.insert(latencies.end(), caller.latencies_ns.begin(), caller.latencies_ns.end());
    received.insert(received.end(), caller.received.begin(), caller.received.end());
  }
  report.ids = report.calls_ok;
  set_latencies(report, latencies);
  if (options.verify) report.duplicates = count_duplicates(received);
  return report;
}

std::string format_report(const ThriftBenchOptions& options, const LoadReport& report) {
  return fmt::format("target {}:{}: get_id, {} connections, {:.1f} s\n", options.host, options.port,
                     options.connections, report.elapsed.count()) +
         format_load(report, options.verify);
}

}  // namespace snowid::cli
