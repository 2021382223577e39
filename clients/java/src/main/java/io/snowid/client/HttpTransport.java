/*
 * HttpTransport: the client's HTTP calls to one snowidd node at a time (GET /v1/ids, GET
 * /v1/segment/{tag}, GET /v1/info), each with the call deadline, the bearer token and the agent,
 * over keep-alive HTTP/1.1 connections (HttpConnection), a pool of idle ones per endpoint: a call
 * takes one (or opens one), and gives it back after a whole answer that leaves it usable.
 *
 * Batches are asked for in binary (format=binary: 8 bytes a number, little-endian, Content-Type
 * application/octet-stream), or in JSON from a node that refused binary (Batch.binaryRefused tells
 * the caller, which asks that node in JSON from then on).
 *
 * The call deadline covers the whole call: connect, headers and the whole body. A body is read
 * into at most what its answer may take (HttpConnection): a binary batch of N numbers 8 * N bytes, a
 * JSON one N * 24 + 64, a business batch businessLimit(N), /v1/info INFO_LIMIT; a longer one fails
 * the call as soon as that is known.
 *
 * Every failure is a CallFailure that says what it means for the client: NODE (connection
 * refused or reset, deadline passed, 5xx, 408, 429, a reply that is not the expected one: back
 * off this endpoint and ask the next) or REFUSED (401 and 403: the token; 404: the tag; 409: the
 * tag's state, retired or its period's numbers past the template's width; other 4xx: this client's
 * request is wrong, every node will say the same, so callers are told at once). A
 * NODE failure after a 200 to a batch call (a batch that breaks docs/clients.md "What a client
 * accepts": malformed, too long, too slow, of the wrong Content-Type) is an invalid answer, which
 * the client counts.
 *
 * Thread-safety: calls may come from any thread; cancelInFlight() from any thread aborts the
 * calls under way (close()), and every later call fails at once.
 */
package io.snowid.client;

import io.snowid.client.JsonReader.JsonException;
import io.snowid.client.SnowidException.Code;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import javax.net.ssl.SSLSocketFactory;

final class HttpTransport {
  /** A failed call: whose fault it is, the code callers see, and a message naming the node. */
  static final class CallFailure extends Exception {
    private static final long serialVersionUID = 1L;

    final boolean refused;
    final Code code;
    final boolean invalidAnswer; // a 200 to a batch call that the client does not take
    final int status; // the HTTP status that said so; 0 if none came

    CallFailure(boolean refused, Code code, String message) {
      this(refused, code, message, false, 0);
    }

    private CallFailure(
        boolean refused, Code code, String message, boolean invalidAnswer, int status) {
      super(message);
      this.refused = refused;
      this.code = code;
      this.invalidAnswer = invalidAnswer;
      this.status = status;
    }

    /** A batch the client does not take (docs/clients.md, "What a client accepts"). */
    static CallFailure invalidAnswer(String message) {
      return new CallFailure(false, Code.UNAVAILABLE, message + " (the batch is discarded)", true, 200);
    }
  }

  /** A batch as a node gave it: its IDs and its Snowid-Issuer header ("" if it had none). */
  record Batch(long[] ids, String issuer) {}

  /** A node that answers format=binary with 400 naming the format: it predates binary batches. */
  static final class BinaryRefused extends Exception {
    private static final long serialVersionUID = 1L;

    BinaryRefused(String message) {
      super(message);
    }
  }

  /** What a /v1/info body may take. */
  static final int INFO_LIMIT = 1 << 20;

  /** What is kept of a body whose status is not 200 (an error message, only shown). */
  static final int ERROR_LIMIT = 64 * 1024;

  private final Duration deadline;
  private final String authorization; // null: none
  private final String agent; // null: none
  private final ConcurrentHashMap<URI, ConcurrentLinkedDeque<HttpConnection>> idle =
      new ConcurrentHashMap<>();
  private final Set<HttpConnection> inUse = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;
  private final javax.net.ssl.SSLContext sslContext; // null: the JVM's default
  private volatile SSLSocketFactory tls; // made on the first https call

  HttpTransport(SnowidClientOptions options) {
    this.sslContext = options.sslContext();
    this.deadline = options.callDeadline();
    this.authorization =
        options.bearerToken().isEmpty() ? null : "Bearer " + options.bearerToken();
    this.agent = options.agent().isEmpty() ? null : options.agent();
  }

  /** What the body of a JSON batch of `count` IDs may take (docs/clients.md): 24 bytes an ID, and 64. */
  static int batchLimit(int count) {
    return count * 24 + 64;
  }

  /**
   * 1 to `count` Snowflake IDs (tag null) or numbers of segment tag `tag`, strictly increasing, as
   * Replies.ids() or Replies.binaryIds() reads them; whether the batch lies above the one before
   * is the caller's to judge. `binary`: ask for format=binary; BinaryRefused if the node answers
   * that with 400 naming the format.
   */
  Batch ids(URI node, String tag, int count, boolean binary)
      throws CallFailure, BinaryRefused, InterruptedException {
    final String path =
        (tag == null ? "/v1/ids?count=" : "/v1/segment/" + percentEncode(tag) + "?count=") + count
            + (binary ? "&format=binary" : "");
    final HttpConnection.Answer response;
    try {
      response = get(node, path, binary ? 8 * count : batchLimit(count), true);
    } catch (CallFailure f) {
      if (binary && f.status == 400 && f.getMessage().contains("format")) {
        throw new BinaryRefused(f.getMessage());
      }
      throw f;
    }
    try {
      final String issuer = response.issuer();
      if (!binary) return new Batch(Replies.ids(response.body(), count), issuer);
      final String type = response.contentType();
      if (!mediaType(type).equals(BINARY_TYPE)) {
        throw new JsonException("Content-Type '" + type + "' where " + BINARY_TYPE + " is due");
      }
      return new Batch(Replies.binaryIds(response.body(), count), issuer);
    } catch (JsonException e) {
      throw CallFailure.invalidAnswer(node + path + ": unexpected reply: " + e.getMessage());
    }
  }

  /**
   * What the body of a business batch of `count` IDs may take: each ID's 256 bytes escaped (at most
   * 6 bytes a byte, as \\u00XX) with its quotes and comma, and 1 KiB for the tag and the rest.
   */
  static int businessLimit(int count) {
    return (int) Math.min(Integer.MAX_VALUE - 8,
        (long) count * (6 * Replies.MAX_BUSINESS_ID_BYTES + 3) + 1024);
  }

  /**
   * Exactly `count` business IDs of segment tag `tag` (GET /v1/business/{tag}?count=N, the tag
   * percent-encoded), as Replies.businessIds() reads them from an answer whose Content-Type is
   * JSON; anything else a node sends is an invalid answer.
   */
  List<String> business(URI node, String tag, int count)
      throws CallFailure, InterruptedException {
    final String path = "/v1/business/" + percentEncode(tag) + "?count=" + count;
    final HttpConnection.Answer response = get(node, path, businessLimit(count), true);
    try {
      final String type = response.contentType();
      if (!mediaType(type).equals(JSON_TYPE)) {
        throw new JsonException("Content-Type '" + type + "' where " + JSON_TYPE + " is due");
      }
      return Replies.businessIds(response.body(), tag, count);
    } catch (JsonException e) {
      throw CallFailure.invalidAnswer(node + path + ": unexpected reply: " + e.getMessage());
    }
  }

  static final String BINARY_TYPE = "application/octet-stream";
  static final String JSON_TYPE = "application/json";

  /** A Content-Type's media type: parameters left off, in lower case (RFC 9110 8.3.1). */
  static String mediaType(String contentType) {
    final int semicolon = contentType.indexOf(';');
    return (semicolon < 0 ? contentType : contentType.substring(0, semicolon))
        .trim()
        .toLowerCase(java.util.Locale.ROOT);
  }

  Replies.NodeInfo info(URI node) throws CallFailure, InterruptedException {
    final byte[] body = get(node, "/v1/info", INFO_LIMIT, false).body();
    try {
      return Replies.info(body);
    } catch (JsonException e) {
      throw new CallFailure(false, Code.UNAVAILABLE, node + "/v1/info: unexpected reply: " + e.getMessage());
    }
  }

  /** Aborts the calls under way and closes every connection; every later call fails at once. */
  void cancelInFlight() {
    closed = true;
    for (HttpConnection connection : inUse) connection.close();
    for (ConcurrentLinkedDeque<HttpConnection> connections : idle.values()) {
      for (HttpConnection connection; (connection = connections.poll()) != null; ) {
        connection.close();
      }
    }
  }

  /**
   * The 200 answer to GET node+path, its body whole and at most `limit` bytes, within the call
   * deadline. `batch`: a call for IDs, which names the agent, and whose 200 answer that fails is an
   * invalid answer.
   */
  private HttpConnection.Answer get(URI node, String path, int limit, boolean batch)
      throws CallFailure, InterruptedException {
    // The JVM's TLS set-up (its trust store, its providers) takes a cold JVM up to seconds: it is
    // not the node's time, so it comes before the call's deadline starts.
    final SSLSocketFactory factory = node.getScheme().equals("https") ? tlsFactory() : null;
    final long due = System.nanoTime() + deadline.toNanos();
    final byte[] request = request(node, path, batch);
    final ConcurrentLinkedDeque<HttpConnection> pool =
        idle.computeIfAbsent(node, n -> new ConcurrentLinkedDeque<>());
    for (;;) {
      if (closed) throw new CallFailure(false, Code.CLOSED, "the client is closed");
      HttpConnection connection = pool.pollFirst();
      final boolean reused = connection != null;
      try {
        if (connection == null) connection = new HttpConnection(node, factory, due);
      } catch (IOException e) {
        throw closedOr(new CallFailure(false, Code.UNAVAILABLE, node + path + ": " + describe(e)));
      }
      inUse.add(connection);
      HttpConnection.Answer answer = null;
      try {
        answer = connection.exchange(request, limit, ERROR_LIMIT, due);
      } catch (IOException e) {
        connection.close();
        // A kept-alive connection the node closed meanwhile: once more on a new one.
        if (reused && !connection.answered() && !(e instanceof HttpConnection.DeadlinePassed)) {
          continue;
        }
        throw closedOr(broken(batch && connection.status == 200, node + path, describe(e)));
      } finally {
        inUse.remove(connection);
        if (answer != null && connection.reusable() && !closed) {
          pool.offerFirst(connection);
        } else {
          connection.close();
        }
      }
      if (Thread.interrupted()) throw new InterruptedException();
      if (answer.status() == 200) return answer;
      throw failure(node + path, answer.status(), Replies.errorMessage(answer.body()));
    }
  }

  private SSLSocketFactory tlsFactory() {
    SSLSocketFactory factory = tls;
    if (factory == null) {
      tls = factory = sslContext != null
          ? sslContext.getSocketFactory() : (SSLSocketFactory) SSLSocketFactory.getDefault();
    }
    return factory;
  }

  private byte[] request(URI node, String path, boolean batch) {
    final StringBuilder text = new StringBuilder(256)
        .append("GET ").append(path).append(" HTTP/1.1\r\nHost: ").append(node.getRawAuthority())
        .append("\r\nAccept: */*\r\nUser-Agent: snowid-client-java\r\n");
    if (authorization != null) text.append("Authorization: ").append(authorization).append("\r\n");
    if (batch && agent != null) text.append("X-Snowid-Agent: ").append(agent).append("\r\n");
    return text.append("\r\n").toString().getBytes(StandardCharsets.UTF_8);
  }

  // The failure, or CLOSED if the client was closed meanwhile (which is what broke the call).
  private CallFailure closedOr(CallFailure failure) {
    return closed ? new CallFailure(false, Code.CLOSED, "the client is closed") : failure;
  }

  private String describe(IOException e) {
    if (e instanceof HttpConnection.DeadlinePassed) {
      return "no whole reply within " + deadline.toMillis() + " ms";
    }
    return e.getMessage() == null ? e.toString() : e.getClass().getSimpleName() + ": " + e.getMessage();
  }

  // A call that failed on the way: the node's failure, and an invalid answer if a 200 had come.
  private static CallFailure broken(boolean answered, String what, String why) {
    return answered
        ? CallFailure.invalidAnswer(what + ": HTTP 200, then " + why)
        : new CallFailure(false, Code.UNAVAILABLE, what + ": " + why);
  }

  static CallFailure failure(String what, int status, String message) {
    final String text = what + ": HTTP " + status + ": " + message;
    if (status == 401 || status == 403) {
      return new CallFailure(true, Code.UNAUTHENTICATED, text, false, status);
    }
    if (status == 404) return new CallFailure(true, Code.NOT_FOUND, text, false, status);
    if (status == 409) return new CallFailure(true, Code.FAILED_PRECONDITION, text, false, status);
    if (status >= 400 && status < 500 && status != 408 && status != 429) {
      return new CallFailure(true, Code.INVALID_ARGUMENT, text, false, status);
    }
    return new CallFailure(false, Code.UNAVAILABLE, text, false, status);
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
