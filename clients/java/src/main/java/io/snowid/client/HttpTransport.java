/*
 * HttpTransport: the client's HTTP calls to one snowidd node at a time (GET /v1/ids, GET
 * /v1/segment/{tag}, GET /v1/info), each with the call deadline, the bearer token and the agent,
 * over java.net.http.HttpClient's keep-alive HTTP/1.1 connections (one pool per client: a
 * connection per endpoint for the refill thread).
 *
 * The call deadline covers the whole call: connect, headers and the whole body. A body is read
 * into at most what its answer may take (BoundedBody): a batch of N IDs N * 24 + 64 bytes, /v1/info
 * INFO_LIMIT; a longer one fails the call as soon as that is known.
 *
 * Every failure is a CallFailure that says what it means for the client: NODE (connection
 * refused or reset, deadline passed, 5xx, 408, 429, a reply that is not the expected JSON: back
 * off this endpoint and ask the next) or REFUSED (401, 404, other 4xx: this client's request is
 * wrong, every node will say the same, so callers are told at once). A NODE failure after a 200
 * to a batch call (a batch that breaks docs/clients.md "What a client accepts": malformed, too
 * long, too slow) is an invalid answer, which the client counts.
 *
 * Thread-safety: calls may come from any thread; cancelInFlight() from any thread aborts the
 * calls under way (close()), and every later call fails at once.
 */
package io.snowid.client;

import io.snowid.client.JsonReader.JsonException;
import io.snowid.client.SnowidException.Code;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

final class HttpTransport {
  /** A failed call: whose fault it is, the code callers see, and a message naming the node. */
  static final class CallFailure extends Exception {
    private static final long serialVersionUID = 1L;

    final boolean refused;
    final Code code;
    final boolean invalidAnswer; // a 200 to a batch call that the client does not take

    CallFailure(boolean refused, Code code, String message) {
      this(refused, code, message, false);
    }

    private CallFailure(boolean refused, Code code, String message, boolean invalidAnswer) {
      super(message);
      this.refused = refused;
      this.code = code;
      this.invalidAnswer = invalidAnswer;
    }

    /** A batch the client does not take (docs/clients.md, "What a client accepts"). */
    static CallFailure invalidAnswer(String message) {
      return new CallFailure(false, Code.UNAVAILABLE, message + " (the batch is discarded)", true);
    }
  }

  /** A batch as a node gave it: its IDs and its Snowid-Issuer header ("" if it had none). */
  record Batch(long[] ids, String issuer) {}

  static final String ISSUER_HEADER = "Snowid-Issuer";
  /** What a /v1/info body may take. */
  static final int INFO_LIMIT = 1 << 20;

  private final HttpClient http;
  private final Counters counters;
  private final Duration deadline;
  private final String authorization; // null: none
  private final String agent; // null: none
  private final Set<CompletableFuture<?>> inFlight = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  HttpTransport(SnowidClientOptions options, Counters counters) {
    this.counters = counters;
    this.deadline = options.callDeadline();
    this.authorization =
        options.bearerToken().isEmpty() ? null : "Bearer " + options.bearerToken();
    this.agent = options.agent().isEmpty() ? null : options.agent();
    this.http =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(deadline)
            .followRedirects(HttpClient.Redirect.NEVER)
            .build();
  }

  /** What the body of a batch of `count` IDs may take (docs/clients.md): 24 bytes an ID, and 64. */
  static int batchLimit(int count) {
    return count * 24 + 64;
  }

  /**
   * 1 to `count` Snowflake IDs (tag null) or numbers of segment tag `tag`, strictly increasing, as
   * Replies.ids() reads them; whether the batch lies above the one before is the caller's to judge.
   */
  Batch ids(URI node, String tag, int count) throws CallFailure, InterruptedException {
    final String path =
        tag == null ? "/v1/ids?count=" + count : "/v1/segment/" + percentEncode(tag) + "?count=" + count;
    final HttpResponse<byte[]> response = get(node, path, batchLimit(count), true);
    try {
      final String issuer = response.headers().firstValue(ISSUER_HEADER).orElse("");
      return new Batch(Replies.ids(response.body(), count), issuer);
    } catch (JsonException e) {
      throw CallFailure.invalidAnswer(node + path + ": unexpected reply: " + e.getMessage());
    }
  }

  Replies.NodeInfo info(URI node) throws CallFailure, InterruptedException {
    final byte[] body = get(node, "/v1/info", INFO_LIMIT, false).body();
    try {
      return Replies.info(body);
    } catch (JsonException e) {
      throw new CallFailure(false, Code.UNAVAILABLE, node + "/v1/info: unexpected reply: " + e.getMessage());
    }
  }

  /** Aborts the calls under way; every later call fails at once. */
  void cancelInFlight() {
    closed = true;
    for (CompletableFuture<?> call : inFlight) call.cancel(true);
  }

  /**
   * The 200 answer to GET node+path, its body whole and at most `limit` bytes, within the call
   * deadline. `batch`: a call for IDs, which names the agent, and whose 200 answer that fails is an
   * invalid answer.
   */
  private HttpResponse<byte[]> get(URI node, String path, int limit, boolean batch)
      throws CallFailure, InterruptedException {
    final HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(node + path)).timeout(deadline).GET();
    if (authorization != null) request.header("Authorization", authorization);
    if (batch && agent != null) request.header("X-Snowid-Agent", agent);
    final BoundedBody body = new BoundedBody(limit);
    counters.requests.incrementAndGet();
    final CompletableFuture<HttpResponse<byte[]>> call = http.sendAsync(request.build(), body);
    inFlight.add(call);
    final HttpResponse<byte[]> response;
    try {
      if (closed) throw new CallFailure(false, Code.CLOSED, "the client is closed");
      response = call.get(deadline.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw broken(batch && body.status() == 200, node + path,
          "no whole reply within " + deadline.toMillis() + " ms");
    } catch (ExecutionException e) {
      final Throwable cause = e.getCause() == null ? e : e.getCause();
      throw broken(batch && body.status() == 200, node + path, cause.toString());
    } catch (java.util.concurrent.CancellationException e) {
      throw new CallFailure(false, Code.CLOSED, "the client is closed");
    } finally {
      call.cancel(true); // no-op once complete; aborts the exchange on a timeout
      inFlight.remove(call);
    }
    final int status = response.statusCode();
    if (status == 200) return response;
    throw failure(node + path, status, Replies.errorMessage(response.body()));
  }

  // A call that failed on the way: the node's failure, and an invalid answer if a 200 had come.
  private static CallFailure broken(boolean answered, String what, String why) {
    return answered
        ? CallFailure.invalidAnswer(what + ": HTTP 200, then " + why)
        : new CallFailure(false, Code.UNAVAILABLE, what + ": " + why);
  }

  private static CallFailure failure(String what, int status, String message) {
    final String text = what + ": HTTP " + status + ": " + message;
    if (status == 401) return new CallFailure(true, Code.UNAUTHENTICATED, text);
    if (status == 404) return new CallFailure(true, Code.NOT_FOUND, text);
    if (status >= 400 && status < 500 && status != 408 && status != 429) {
      return new CallFailure(true, Code.INVALID_ARGUMENT, text);
    }
    return new CallFailure(false, Code.UNAVAILABLE, text);
  }

  /** Every byte of the UTF-8 form but the unreserved ones (RFC 3986) as %XX. */
  static String percentEncode(String text) {
    final StringBuilder out = new StringBuilder();
    for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
      final int c = b & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '.' || c == '_' || c == '~') {
        out.append((char) c);
      } else {
        out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
      }
    }
    return out.toString();
  }
}
