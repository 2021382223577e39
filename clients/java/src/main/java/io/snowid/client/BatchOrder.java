/*
 * BatchOrder: one endpoint's record of the last ID of each issuer's batches, which holds every
 * batch above the one before it from the same node (docs/clients.md, "What a client accepts").
 *
 * A snowidd process names itself in every answer (the Snowid-Issuer header, a token drawn once per
 * start) and each of its batches lies above its last, per tag, for as long as it runs. So the first
 * ID of a batch must be above the last ID of the batch before with the same endpoint, tag and
 * issuer (without the header: the same endpoint and tag). Batches of different issuers are never
 * compared: a proxy in front of several nodes hands out each one's in turn, and the client follows
 * them node by node.
 *
 * Bounded: an endpoint keeps its MAX_ORIGINS most recently seen (tag, issuer) pairs, and an issuer
 * by its first MAX_ISSUER_CHARS characters (snowidd's are 16 hex digits). A proxy that names a new
 * issuer per batch costs a bounded amount of memory; cutting an issuer can only merge two of them,
 * which makes the check stricter, never looser.
 *
 * Not thread-safe: one per endpoint, used by the refill thread only.
 */
package io.snowid.client;

import java.util.Iterator;
import java.util.LinkedHashMap;

final class BatchOrder {
  static final int MAX_ORIGINS = 1024;
  static final int MAX_ISSUER_CHARS = 64;

  // Where a batch came from: a segment tag (null: Snowflake IDs) and an issuer ("": none said).
  private record Origin(String tag, String issuer) {}

  // In access order: the eldest entry is the one seen least recently.
  private final LinkedHashMap<Origin, Long> last = new LinkedHashMap<>(16, 0.75f, true);

  /**
   * If `ids` (strictly increasing, at least one) starts above the last batch of the same tag and
   * issuer, records its last ID and returns -1; otherwise records nothing and returns that batch's
   * last ID, which the batch is not above.
   */
  long advance(String tag, String issuer, long[] ids) {
    final String key = issuer.length() > MAX_ISSUER_CHARS ? issuer.substring(0, MAX_ISSUER_CHARS) : issuer;
    final Origin origin = new Origin(tag, key);
    final Long before = last.get(origin);
    if (before != null && ids[0] <= before) return before;
    last.put(origin, ids[ids.length - 1]);
    if (last.size() > MAX_ORIGINS) {
      final Iterator<Origin> eldest = last.keySet().iterator();
      eldest.next();
      eldest.remove();
    }
    return -1;
  }
}
