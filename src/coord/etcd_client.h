// A small synchronous client of etcd's v3 gRPC API (the subset in
// proto/etcd/), shared by the etcd coordinator, `snowid cluster` and tests.
//
// Every call has a deadline (EtcdOptions::request_timeout per member tried).
// A call that cannot reach a member (UNAVAILABLE, DEADLINE_EXCEEDED) is tried
// on the next endpoint, each at most once; the member that answered is tried
// first next time. Other errors (a lease not found, a permission denied) are
// answers and are returned at once. A call that timed out may still have been
// applied: callers make their writes safe to repeat (see etcd_claim.cc).
//
// With a user, the client authenticates per member (etcd's simple tokens are
// member-local) and sends the token as "token" metadata, authenticating again
// once if a token is refused.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/rpc.grpc.pb.h"
#include "etcd_coordinator.h"
#include "leased_claim.h"
#include "snowid/error.h"

namespace snowid::coord {

class EtcdClient {
 public:
  // Checks the endpoints and TLS files; connects lazily.
  static Result<std::unique_ptr<EtcdClient>> connect(const EtcdOptions& options);
  ~EtcdClient();

  Result<etcdserverpb::RangeResponse> range(const etcdserverpb::RangeRequest& request);
  Result<etcdserverpb::PutResponse> put(const etcdserverpb::PutRequest& request);
  Result<etcdserverpb::DeleteRangeResponse> delete_range(
      const etcdserverpb::DeleteRangeRequest& request);
  Result<etcdserverpb::TxnResponse> txn(const etcdserverpb::TxnRequest& request);

  Result<etcdserverpb::LeaseGrantResponse> lease_grant(std::chrono::seconds ttl);
  // Ok if the lease is gone already.
  Status lease_revoke(std::int64_t lease_id);
  // One keep-alive round on a LeaseKeepAlive stream opened for it (the
  // stream's deadline bounds the round). A response TTL <= 0: the lease is gone.
  Result<etcdserverpb::LeaseKeepAliveResponse> lease_keep_alive(std::int64_t lease_id);
  Result<etcdserverpb::LeaseTimeToLiveResponse> lease_time_to_live(std::int64_t lease_id);

  const StoreCounters& counters() const { return counters_; }

 private:
  struct Member;
  explicit EtcdClient(const EtcdOptions& options);
  template <typename Response, typename Invoke>
  Result<Response> call(std::string_view what, Invoke invoke);
  Status authenticate(Member& member);

  EtcdOptions options_;
  std::vector<std::unique_ptr<Member>> members_;
  std::atomic<std::size_t> preferred_{0};
  StoreCounters counters_;
};

}  // namespace snowid::coord
