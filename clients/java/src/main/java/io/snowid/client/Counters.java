/*
 * Counters: what a client did since it was opened, as SnowidClient.stats() reports it. The refill
 * thread (and decode(), when it reads /v1/info itself) adds; any thread reads.
 */
package io.snowid.client;

import java.util.concurrent.atomic.AtomicLong;

final class Counters {
  final AtomicLong requests = new AtomicLong(); // HTTP calls started (batches, /v1/info)
  final AtomicLong failures = new AtomicLong(); // of those, the ones that brought nothing usable
  final AtomicLong fetched = new AtomicLong(); // Snowflake IDs and segment numbers taken
  final AtomicLong invalidAnswers = new AtomicLong(); // batches refused (docs/clients.md)

  SnowidClient.Stats snapshot() {
    return new SnowidClient.Stats(
        requests.get(), failures.get(), fetched.get(), invalidAnswers.get());
  }
}
