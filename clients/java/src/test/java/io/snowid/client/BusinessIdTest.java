/*
 * SnowidClient.nextBusiness against real snowidd nodes (Snowidd, from $SNOWIDD) on one SQLite
 * segment store, behind a tokens file, the tags made over POST /v1/tags with the admin token:
 * well-formed business IDs that never repeat across calls and nodes, a retired tag's refusal, a
 * refused token, an unknown tag; and, against a scripted node on loopback (ScriptedNode), answers
 * the client must not take and a 503, each met by failing over to the real node.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.snowid.client.SnowidException.Code;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

public class BusinessIdTest {
  private static final String ADMIN = "ops-secret";
  private static final String TOKENS = """
      [[token]]
      name = "ops"
      token = "ops-secret"
      admin = true
      """;
  private static final Pattern ORDER = Pattern.compile("ORD-\\d{8}-\\d{6}");
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static Path dir;
  private static Snowidd a;
  private static Snowidd b;

  @BeforeClass
  public static void startTwoNodesOnOneStore() throws Exception {
    dir = Files.createTempDirectory("snowid-java-business-");
    final Path tokens = Files.writeString(dir.resolve("tokens.toml"), TOKENS);
    final String store = "sqlite://" + dir.resolve("segments.db").toAbsolutePath();
    a = new Snowidd(0, 1, "--segment-store", store, "--tokens-file", tokens.toString());
    b = new Snowidd(0, 2, "--segment-store", store, "--tokens-file", tokens.toString());
    createTag("orders", "ORD-{yyyyMMdd}-{seq:06}");
  }

  @AfterClass
  public static void stopNodes() throws IOException {
    if (a != null) a.close();
    if (b != null) b.close();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
    }
  }

  // POST /v1/tags with the admin token: a tag whose numbers read as `template`, in UTC.
  private static void createTag(String tag, String template) throws Exception {
    final String body = "{\"tag\": \"" + tag + "\", \"step\": 100, \"template\": \"" + template
        + "\", \"zone\": \"UTC\"}";
    final HttpResponse<String> created = admin("POST", "/v1/tags", body);
    assertEquals(created.body(), 201, created.statusCode());
  }

  private static HttpResponse<String> admin(String method, String path, String body)
      throws Exception {
    final HttpRequest request = HttpRequest.newBuilder(URI.create(a.url() + path))
        .timeout(Duration.ofSeconds(5))
        .header("Authorization", "Bearer " + ADMIN)
        .method(method, body.isEmpty() ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body))
        .build();
    return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private static SnowidClientOptions.Builder options(String token, String... endpoints) {
    return SnowidClientOptions.builder()
        .endpoints(endpoints)
        .bearerToken(token)
        .callDeadline(Duration.ofSeconds(2))
        .backoffInitial(Duration.ofMillis(50))
        .backoffMax(Duration.ofMillis(200))
        .emptyWait(Duration.ofSeconds(2));
  }

  private static long millisSince(long startNanos) {
    return (System.nanoTime() - startNanos) / 1_000_000;
  }

  @Test
  public void businessIdsAreWellFormedAndNeverRepeat() {
    try (SnowidClient client = SnowidClient.open(options(ADMIN, a.url(), b.url()).build())) {
      final Set<String> seen = new HashSet<>();
      for (int round = 0; round < 10; round++) {
        final List<String> ids = client.nextBusiness("orders", 150); // above the step of 100
        assertEquals(150, ids.size());
        for (String id : ids) {
          assertTrue(id, ORDER.matcher(id).matches());
          assertTrue(id + " twice", seen.add(id));
        }
        final String one = client.nextBusiness("orders");
        assertTrue(one, ORDER.matcher(one).matches());
        assertTrue(one + " twice", seen.add(one));
      }
      assertThrows(UnsupportedOperationException.class,
          () -> client.nextBusiness("orders", 2).add("x"));
      assertEquals(0, client.stats().failedCalls());
    }
  }

  // Retired on node a: a refuses at once, with no other node asked; node b (the same store) may
  // serve from what it holds for a while, and refuses once it sees the retirement.
  @Test
  public void aRetiredTagIsAFailedPreconditionNamingTheTagAndNotRetried() throws Exception {
    createTag("gone", "G{seq:04}");
    try (SnowidClient client = SnowidClient.open(options(ADMIN, a.url()).build())) {
      assertEquals("G0001", client.nextBusiness("gone"));
      assertEquals(200, admin("DELETE", "/v1/tags/gone", "").statusCode());
      final long calls = client.stats().calls();
      final SnowidException e =
          assertThrows(SnowidException.class, () -> client.nextBusiness("gone", 3));
      assertEquals(e.getMessage(), Code.FAILED_PRECONDITION, e.code());
      assertTrue(e.getMessage(), e.getMessage().startsWith("business IDs of tag 'gone': "));
      assertTrue(e.getMessage(), e.getMessage().contains("HTTP 409"));
      assertEquals("not retried", calls + 1, client.stats().calls());
    }
    try (SnowidClient client = SnowidClient.open(options(ADMIN, a.url(), b.url()).build())) {
      final long due = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      for (int refusedInARow = 0; refusedInARow < 6; ) {
        assertTrue("node b still serves a retired tag", System.nanoTime() < due);
        try {
          client.nextBusiness("gone");
          refusedInARow = 0;
          Thread.sleep(50);
        } catch (SnowidException e) {
          assertEquals(e.getMessage(), Code.FAILED_PRECONDITION, e.code());
          refusedInARow++;
        }
      }
    }
  }

  @Test
  public void aWrongTokenAnUnknownTagAndABadCountAreRefused() {
    try (SnowidClient client = SnowidClient.open(options("wrong", a.url(), b.url()).build())) {
      final long began = System.nanoTime();
      final SnowidException e =
          assertThrows(SnowidException.class, () -> client.nextBusiness("orders"));
      assertEquals(e.getMessage(), Code.UNAUTHENTICATED, e.code());
      assertTrue("a refusal does not wait out emptyWait", millisSince(began) < 1500);
    }
    try (SnowidClient client = SnowidClient.open(options(ADMIN, a.url()).build())) {
      assertEquals(Code.NOT_FOUND,
          assertThrows(SnowidException.class, () -> client.nextBusiness("nosuchtag")).code());
      assertEquals(Code.INVALID_ARGUMENT,
          assertThrows(SnowidException.class, () -> client.nextBusiness("orders", 0)).code());
      assertEquals(Code.INVALID_ARGUMENT, // above the node's max_batch (10000): its 400
          assertThrows(SnowidException.class, () -> client.nextBusiness("orders", 10_001)).code());
      assertEquals(Code.INVALID_ARGUMENT,
          assertThrows(SnowidException.class, () -> client.nextBusiness("", 1)).code());
      client.close();
      assertEquals(Code.CLOSED,
          assertThrows(SnowidException.class, () -> client.nextBusiness("orders")).code());
    }
  }

  // A scripted node answers every business call with one bad answer (or a 503); the client never
  // hands it out, counts the invalid ones, names the node when it is the only endpoint, and takes
  // the real node's answer when there is one.
  @Test
  public void badBusinessAnswersAreNeverHandedOut() throws Exception {
    final String three = "{\"tag\":\"orders\",\"ids\":[\"ORD-1\",\"ORD-2\",\"ORD-3\"]}";
    final List<ScriptedNode.Answer> bad = List.of(
        ScriptedNode.json(three.replace("ORD-2", "ORD-1")), // a duplicate
        ScriptedNode.json("{\"tag\":\"orders\",\"ids\":[\"ORD-1\",\"ORD-2\"]}"), // fewer
        ScriptedNode.json(three.replace("ORD-3\"", "ORD-3\",\"ORD-4\"")), // more
        ScriptedNode.json(three.replace("ORD-2", "")), // empty
        ScriptedNode.json(three.replace("ORD-2", "ORD\\u0000")), // a control character
        ScriptedNode.json(three.replace("ORD-2", "x".repeat(257))), // too long
        ScriptedNode.json(three.replace("\"ORD-2\"", "2")), // a number
        ScriptedNode.json(three.replace("orders", "invoices")), // another tag
        ScriptedNode.json(three.substring(0, 30)), // truncated
        new ScriptedNode.Answer(200, "text/html", three), // not JSON by its Content-Type
        new ScriptedNode.Answer(200, "text/html", "<html>welcome</html>"));
    for (ScriptedNode.Answer answer : bad) {
      try (ScriptedNode node = new ScriptedNode(answer);
          SnowidClient alone = SnowidClient.open(options(ADMIN, node.url())
              .emptyWait(Duration.ofSeconds(1)).build())) {
        final SnowidException e =
            assertThrows(SnowidException.class, () -> alone.nextBusiness("orders", 3));
        assertEquals(answer.body(), Code.UNAVAILABLE, e.code());
        assertTrue(e.getMessage(), e.getMessage().contains(node.url() + "/v1/business/orders"));
        assertTrue(e.getMessage(), e.getMessage().contains("discarded"));
        assertTrue(alone.stats().invalidAnswers() >= 1);
        assertEquals(alone.stats().failedCalls(), alone.stats().invalidAnswers());
        assertTrue("retried as the node came due", node.requests.get() >= 2);
      }
    }
    final List<ScriptedNode.Answer> failing = new ArrayList<>(bad);
    failing.add(new ScriptedNode.Answer(503, "application/json", "{\"error\":\"store down\"}"));
    for (ScriptedNode.Answer answer : failing) {
      try (ScriptedNode node = new ScriptedNode(answer);
          SnowidClient client = SnowidClient.open(options(ADMIN, node.url(), a.url()).build())) {
        for (int i = 0; i < 4; i++) {
          for (String id : client.nextBusiness("orders", 3)) {
            assertTrue(answer.body() + ": " + id, ORDER.matcher(id).matches());
          }
        }
      }
    }
  }

  /** A node on loopback that answers GET /v1/business/... with one scripted answer, counted. */
  private static final class ScriptedNode implements AutoCloseable {
    record Answer(int status, String contentType, String body) {}

    static Answer json(String body) {
      return new Answer(200, "application/json", body);
    }

    final AtomicInteger requests = new AtomicInteger();
    private final HttpServer server;

    ScriptedNode(Answer answer) throws IOException {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      server.createContext("/v1/business/", exchange -> {
        requests.incrementAndGet();
        final byte[] body = answer.body().getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", answer.contentType());
        exchange.sendResponseHeaders(answer.status(), body.length);
        exchange.getResponseBody().write(body);
        exchange.close();
      });
      server.start();
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Override
    public void close() {
      server.stop(0);
    }
  }
}
