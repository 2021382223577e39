/*
 * Option validation: the defaults are the C++ client's (HTTP's max_batch), and every bad option is
 * refused by name with INVALID_ARGUMENT before a client exists.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.Test;

public class SnowidClientOptionsTest {
  private static SnowidClientOptions.Builder valid() {
    return SnowidClientOptions.builder().endpoints("http://127.0.0.1:8080");
  }

  @Test
  public void defaultsAreTheCppClients() throws SnowidException {
    final SnowidClientOptions o = valid().build();
    assertEquals("http://127.0.0.1:8080", o.endpoints().get(0).toString());
    assertEquals("", o.bearerToken());
    assertEquals("", o.agent());
    assertEquals(Duration.ofMillis(500), o.callDeadline());
    assertEquals(Duration.ofMillis(200), o.emptyWait());
    assertEquals(Duration.ofSeconds(2), o.startWait());
    assertEquals(0.5, o.lowWater(), 0.0);
    assertEquals(1000, o.initialBatch());
    assertEquals(10_000, o.maxBatch());
    assertEquals(Duration.ofMillis(500), o.refillPeriod());
    assertEquals(Duration.ofSeconds(10), o.maxAge());
    assertEquals(Duration.ofMillis(100), o.backoffInitial());
    assertEquals(Duration.ofSeconds(5), o.backoffMax());
  }

  @Test
  public void acceptsUrlsWithOrWithoutPortAndASlash() throws SnowidException {
    final SnowidClientOptions o =
        SnowidClientOptions.builder()
            .endpoints("http://a.example:80/", "https://[::1]:8443", "http://ids.internal")
            .agent("billing-7")
            .build();
    assertEquals(3, o.endpoints().size());
    assertEquals("http://a.example:80", o.endpoints().get(0).toString());
  }

  @Test
  public void everyBadOptionIsNamed() {
    final List<Case> cases =
        List.of(
            new Case("endpoints", b -> SnowidClientOptions.builder()),
            new Case("endpoints", b -> b.endpoints("127.0.0.1:8080")),
            new Case("endpoints", b -> b.endpoints("ftp://127.0.0.1:8080")),
            new Case("endpoints", b -> b.endpoints("http://127.0.0.1:0")),
            new Case("endpoints", b -> b.endpoints("http://127.0.0.1:8080/v1")),
            new Case("endpoints", b -> b.endpoints("http://127.0.0.1:8080?x=1")),
            new Case("endpoints", b -> b.endpoints("http://user@127.0.0.1:8080")),
            new Case("endpoints", b -> b.endpoints("http://")),
            new Case("bearerToken", b -> b.bearerToken("a\nb")),
            new Case("agent", b -> b.agent("9lives")),
            new Case("agent", b -> b.agent("has space")),
            new Case("agent", b -> b.agent("a".repeat(65))),
            new Case("callDeadline", b -> b.callDeadline(Duration.ZERO)),
            new Case("emptyWait", b -> b.emptyWait(Duration.ofMillis(-1))),
            new Case("startWait", b -> b.startWait(Duration.ofMillis(-1))),
            new Case("startWait", b -> b.startWait(null)),
            new Case("lowWater", b -> b.lowWater(0)),
            new Case("lowWater", b -> b.lowWater(1.5)),
            new Case("lowWater", b -> b.lowWater(Double.NaN)),
            new Case("initialBatch", b -> b.initialBatch(0)),
            new Case("maxBatch", b -> b.initialBatch(500).maxBatch(499)),
            new Case("maxBatch", b -> b.maxBatch(1_000_001)),
            new Case("refillPeriod", b -> b.refillPeriod(Duration.ZERO)),
            new Case("maxAge", b -> b.maxAge(Duration.ofMillis(9))),
            new Case("backoffInitial", b -> b.backoffInitial(Duration.ZERO)),
            new Case("backoffMax", b -> b.backoffInitial(Duration.ofSeconds(2)).backoffMax(Duration.ofSeconds(1))));
    for (Case c : cases) {
      final SnowidException e =
          assertThrows(c.option, SnowidException.class, () -> c.change.apply(valid()).build());
      assertEquals(SnowidException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage(), e.getMessage().startsWith(c.option + ":"));
    }
  }

  private record Case(String option, UnaryOperator<SnowidClientOptions.Builder> change) {}
}
