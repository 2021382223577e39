// A protocol front end of snowidd (HTTP, gRPC, …): opened after the node and
// its stores, stopped before them. main() builds every listener from one
// list (make_listeners in src/server/listeners.cc), so that a new protocol
// is its own folder plus one entry there; each answers through IdService's request
// rules (service.h).
//
// Thread-safety: start(), stop_accepting() and stop() from main()'s thread,
// in that order (set_connection_limit() between start() and stop());
// stop_accepting() may be called again (it then does nothing new), and on a
// listener whose start() failed or was never called.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "endpoint.h"
#include "descriptor_budget.h"
#include "service.h"

namespace snowid::server {

class Listener {
 public:
  virtual ~Listener() = default;

  // The protocol's name: /v1/info's key for the bound address, and what the
  // coordinator publishes it as ("http", "grpc").
  virtual std::string_view protocol() const = 0;
  // Binds the configured address and starts serving, with as many
  // connections as `descriptors` gives this protocol; returns the address
  // bound (a configured port 0 becomes the one the system chose).
  // kInvalidArgument for a bad address or TLS files; kUnavailable if the
  // address is in use.
  virtual Result<Endpoint> start(const DescriptorBudget& descriptors) = 0;
  // On SIGTERM: takes no new connection or call; those under way may
  // finish. Returns at once or after a bounded grace.
  virtual void stop_accepting() = 0;
  // Open connections still being drained after stop_accepting().
  virtual std::int64_t open_connections() const = 0;
  // A new share of the open-file limit (descriptor_budget.h), from main()'s
  // thread while serving: new connections beyond it are refused; those open
  // stay until they close.
  virtual void set_connection_limit(std::int64_t max_connections) = 0;
  // Closes what is still open and joins the listener's threads.
  virtual void stop() = 0;
};

}  // namespace snowid::server
