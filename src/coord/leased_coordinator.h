// The Coordinator of every leasing store: a LeasedClaim (leased_claim.h)
// kept alive by one background thread, its state published in atomics so
// that the server's request path never waits on the store or on a lock.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "leased_claim.h"
#include "snowid/clock.h"
#include "snowid/coordinator.h"

namespace snowid::coord {

// How the coordinator names the store in CoordinatorStats, and what it
// needs of the options.
struct LeasedStore {
  std::string name;  // "etcd", "redis", "zookeeper"
  std::string cluster;
  std::string endpoints;  // as the operator wrote them
  std::chrono::seconds lease_ttl{10};
  Clock* clock = nullptr;  // nullptr: SystemClock
};

// The store as `name` with `options`: endpoints shown as `endpoints_text`,
// or `endpoints` joined by commas if that is empty.
LeasedStore leased_store(std::string name, const LeaseOptions& options,
                         const std::vector<std::string>& endpoints,
                         const std::string& endpoints_text);

std::unique_ptr<Coordinator> make_leased_coordinator(std::unique_ptr<LeasedClaim> claim,
                                                     LeasedStore store);

// The coordinator of the store `name` whose claim is a StoreClaim made of
// `client` (if it connected, else its error) and `options`.
template <typename StoreClaim, typename Options, typename Client>
Result<std::unique_ptr<Coordinator>> make_leased_coordinator(
    std::string name, const Options& options, Result<std::unique_ptr<Client>> client) {
  if (!client.ok()) return client.error();
  return make_leased_coordinator(
      std::make_unique<StoreClaim>(std::move(*client), options),
      leased_store(std::move(name), options, options.endpoints, options.endpoints_text));
}

}  // namespace snowid::coord
