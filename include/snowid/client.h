// snowid::Client: IDs for an application from one or more snowidd nodes,
// served from a local buffer that a background thread keeps topped up over
// gRPC (NextIds for Snowflake IDs, NextSegmentIds for a tag's numbers).
// Business IDs (NextBusinessIds) are not buffered: next_business() asks a
// node on the caller's thread.
//
// next() takes an ID from the buffer: no lock, no allocation, no system call
// but a coarse clock read. Only when the buffer is empty does it wait, at
// most ClientOptions::empty_wait, for the refill; it then returns
// kUnavailable (never blocks forever); until its first batch has arrived, at
// most start_wait. Each refill asks an endpoint drawn at random among the
// healthy ones, so that many clients load every node alike; endpoints that
// fail are skipped with exponential backoff and jitter; while one answers,
// callers see no error.
//
// Order: every ID handed out is unique (issued by a node once, taken from the
// buffer once), and one buffer hands out each node's IDs in increasing order
// (in the order its batches came: behind a proxy over several nodes, one
// node's batch may lie below another's). IDs
// from several clients, or from one client across a failover, are only
// roughly time-ordered: a buffered ID was issued up to max_age ago.
//
// Thread-safety: every method may be called from any number of threads at
// once. Destroying the Client stops the refill thread and cancels its call in
// flight; no call may run concurrently with the destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "snowid/error.h"

namespace snowid {

struct ClientOptions {
  // snowidd gRPC endpoints, HOST:PORT or [IPV6]:PORT; at least one. Each
  // refill goes to one drawn at random among those not backing off.
  std::vector<std::string> endpoints;
  // Sent as "authorization: Bearer <token>" when not empty.
  std::string bearer_token;
  // TLS to every endpoint; root_ca_file empty: the system's root certificates.
  bool tls = false;
  std::string root_ca_file;
  // Client name for the server's metrics: [a-zA-Z][a-zA-Z0-9-]*, at most 64
  // characters; empty: none.
  std::string agent;
  // Deadline of every call to a node.
  std::chrono::milliseconds call_deadline{500};
  // Longest wait of next() on an empty buffer before kUnavailable (0: none).
  std::chrono::milliseconds empty_wait{200};
  // The same wait while a buffer has not had its first batch yet (the
  // first call also opens the first connection): at least empty_wait.
  std::chrono::milliseconds start_wait{2'000};
  // A refill starts when fewer than this fraction of a batch is left, (0, 1].
  double low_water = 0.5;
  // IDs per refill: starts at initial_batch, doubles while refills come
  // sooner than refill_period / 2 and halves while they come later than
  // 2 * refill_period, within [initial_batch, max_batch].
  std::uint32_t initial_batch = 1000;
  std::uint32_t max_batch = 100'000;  // at most 1,000,000 (snowidd's own default limit)
  std::chrono::milliseconds refill_period{500};
  // A Snowflake ID still buffered this long after the call that fetched it
  // began is dropped, not handed out (at least 10 ms). Segment numbers carry
  // no time and never age.
  std::chrono::milliseconds max_age{10'000};
  // A failed endpoint is skipped for backoff_initial, doubled per further
  // failure up to backoff_max, and reset by a success; each wait is drawn
  // between half and all of that (jitter).
  std::chrono::milliseconds backoff_initial{100};
  std::chrono::milliseconds backoff_max{5'000};
};

// What a client has done so far (counters since open(); docs/clients.md,
// "Stats", names the same counters in every language).
struct ClientStats {
  std::uint64_t calls = 0;         // batches asked of the nodes
  std::uint64_t failed_calls = 0;  // of those, the ones that gave no IDs
  // Answers discarded whole, their endpoint failed: fewer or more IDs than
  // asked, one at or above 2^63, not strictly increasing, or not above the
  // last batch of the same issuer (docs/clients.md, "What a client accepts").
  // A part of failed_calls.
  std::uint64_t invalid_answers = 0;
  std::uint64_t ids_received = 0;  // IDs and segment numbers put in the buffers
  std::uint64_t ids_served = 0;    // handed to the application
  std::uint64_t ids_expired = 0;   // dropped unissued after max_age
};

// kInvalidArgument naming the first bad option.
Status validate(const ClientOptions& options);

class Client {
 public:
  // Validates the options, sets up a channel per endpoint and starts the
  // refill thread, which fetches the first batch at once. Connects lazily:
  // an endpoint down now is not an error here.
  static Result<std::unique_ptr<Client>> open(const ClientOptions& options);

  virtual ~Client() = default;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // One Snowflake ID. kUnavailable when the buffer stayed empty for
  // empty_wait; another code (e.g. kInvalidArgument for a refused token or
  // agent) when the nodes refuse this client.
  virtual Result<std::int64_t> next() = 0;
  // Fills `out` completely, each ID as next() would return it; on error the
  // IDs already written are consumed.
  virtual Status next(std::span<std::int64_t> out) = 0;
  // The next number of segment-mode tag `tag`, from a buffer of its own.
  // kNotFound if the nodes do not know the tag.
  virtual Result<std::int64_t> next(std::string_view tag) = 0;

  // `count` (1..1000) business IDs of `tag`, a tag with a template
  // (docs/segments.md), appended to `out` in the order the node took them.
  // Not buffered: a business ID shows the period it was taken in, and one
  // held over a period change would show the old date, so each call asks a
  // node, on the caller's thread, within call_deadline per endpoint. An
  // endpoint that fails, or whose answer is not exactly `count` IDs of 1 to
  // 256 bytes without control characters and no two alike (counted in
  // invalid_answers and never handed out), passes the call to the next.
  // kInvalidArgument for a bad tag or count, or a refused token or count;
  // kNotFound for an unknown tag; kFailedPrecondition for a retired tag, one
  // without a template, or a period whose numbers outgrew the template;
  // kUnavailable if no endpoint answered. `out` is left as it
  // was on error.
  virtual Status next_business(std::string_view tag, std::size_t count,
                               std::vector<std::string>& out) = 0;

  virtual ClientStats stats() const = 0;

 protected:
  Client() = default;
};

}  // namespace snowid
