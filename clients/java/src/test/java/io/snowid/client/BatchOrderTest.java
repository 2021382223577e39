/*
 * BatchOrder: a batch must lie above the last one of the same tag and issuer from an endpoint;
 * batches of other issuers or tags are not compared, and what it remembers stays bounded.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class BatchOrderTest {
  private static final long TAKEN = -1;

  @Test
  public void aBatchMustStartAboveTheLastOfItsIssuer() {
    final BatchOrder order = new BatchOrder();
    assertEquals(TAKEN, order.advance(null, "a1", new long[] {10, 20}));
    assertEquals(20, order.advance(null, "a1", new long[] {20, 30})); // not above 20
    assertEquals(20, order.advance(null, "a1", new long[] {5})); // behind
    assertEquals(TAKEN, order.advance(null, "a1", new long[] {21}));
  }

  @Test
  public void issuersAndTagsAreFollowedEachOnItsOwn() {
    final BatchOrder order = new BatchOrder();
    assertEquals(TAKEN, order.advance(null, "a1", new long[] {1000, 1099}));
    assertEquals(TAKEN, order.advance(null, "b2", new long[] {5, 6})); // a proxy's other node
    assertEquals(TAKEN, order.advance(null, "a1", new long[] {1100}));
    assertEquals(TAKEN, order.advance(null, "b2", new long[] {7}));
    assertEquals(TAKEN, order.advance("order", "a1", new long[] {1})); // a tag of its own
    assertEquals(TAKEN, order.advance(null, "", new long[] {1})); // no issuer said
    assertEquals(1, order.advance(null, "", new long[] {1}));
  }

  @Test
  public void itRemembersTheMostRecentIssuersOnly() {
    final BatchOrder order = new BatchOrder();
    assertEquals(TAKEN, order.advance(null, "kept", new long[] {100}));
    for (int i = 0; i < 5 * BatchOrder.MAX_ORIGINS; i++) {
      assertEquals(TAKEN, order.advance(null, "issuer-" + i, new long[] {i}));
      if (i % 100 == 0) assertEquals(100, order.advance(null, "kept", new long[] {100}));
    }
    // A long issuer is kept by its first MAX_ISSUER_CHARS characters.
    final String prefix = "x".repeat(BatchOrder.MAX_ISSUER_CHARS);
    assertEquals(TAKEN, order.advance(null, prefix + "1", new long[] {50}));
    assertEquals(50, order.advance(null, prefix + "2", new long[] {50}));
  }
}
