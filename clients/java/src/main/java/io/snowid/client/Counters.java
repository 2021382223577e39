/*
 * Counters: what a client did since it was opened, as SnowidClient.stats() reports it in the
 * vocabulary of docs/clients.md ("Stats"). The refill thread (and its helpers) add; any thread
 * reads. IDs served are not counted here: next() adds nothing to its hot path, and stats() works
 * them out from the rings (IdRing.served()) and the IDs handed to waiting callers.
 */
package io.snowid.client;

import java.util.concurrent.atomic.AtomicLong;

final class Counters {
  final AtomicLong calls = new AtomicLong(); // refill calls to nodes, whatever became of them
  final AtomicLong failedCalls = new AtomicLong(); // of those, the ones with no usable answer
  final AtomicLong invalidAnswers = new AtomicLong(); // of those, answers refused (docs/clients.md)
  final AtomicLong idsReceived = new AtomicLong(); // IDs and segment numbers taken into buffers
  final AtomicLong idsHanded = new AtomicLong(); // of those, handed straight to waiting callers
}
