// The state snowidd's front ends share: configuration, the generator, the
// metrics, and the facts /v1/info reports. Thread-safe: front ends call it
// from all their threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "metrics.h"
#include "snowid/generator.h"

namespace snowid::server {

inline constexpr const char* kVersion = "0.1.0";

class IdService {
 public:
  IdService(ServerConfig config, std::unique_ptr<Generator> generator);

  Generator& generator() { return *generator_; }
  const ServerConfig& config() const { return config_; }
  const Layout& layout() const { return generator_->options().layout; }
  Metrics& metrics() { return metrics_; }

  // Ports actually bound (port 0 in the config picks a free one).
  void set_bound_endpoints(Endpoint http, Endpoint grpc);

  nlohmann::json info() const;
  std::string metrics_text() const;

 private:
  ServerConfig config_;
  std::unique_ptr<Generator> generator_;
  Metrics metrics_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  Endpoint http_, grpc_;
};

}  // namespace snowid::server
