/*
 * HttpConnection: one keep-alive HTTP/1.1 connection to a snowidd node (a plain socket, or TLS for
 * https:// endpoints, with the host name verified), on which HttpTransport makes its GET calls one
 * at a time: the request written at once, the answer read straight from the socket into the body
 * array, on the caller's thread (no selector thread, no executor hop: a refill of 10,000 IDs in
 * binary costs about a third of what java.net.http took, and a cold JVM loads far fewer classes).
 *
 * Every read is bounded by the call's deadline (the socket's timeout is what is left of it before
 * each read), so the deadline covers the connect, the headers and the whole body together. A body
 * is read into at most a bound: one that says it is longer (Content-Length) fails before a byte of
 * it is read, one that turns out longer (chunked, or read to the end) as soon as the byte past the
 * bound arrives; the connection is then dropped. Any other status's body is an error message that
 * is only shown: it is cut at a bound.
 *
 * Thread-safety: one call at a time (HttpTransport's pool hands a connection to one caller);
 * close() from any thread aborts the call under way.
 */
package io.snowid.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Locale;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

final class HttpConnection implements AutoCloseable {
  /** An answer: its status, the headers the client reads, and its body. */
  record Answer(int status, String contentType, String issuer, byte[] body) {}

  /** The deadline passed before the whole answer came. */
  static final class DeadlinePassed extends IOException {
    private static final long serialVersionUID = 1L;

    DeadlinePassed(String message) {
      super(message);
    }
  }

  /** A 200 answer's body is longer than what it may take. */
  static final class TooLong extends IOException {
    private static final long serialVersionUID = 1L;

    TooLong(String message) {
      super(message);
    }
  }

  private static final int MAX_LINE = 8 * 1024;
  private static final int MAX_HEADERS = 100;

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final byte[] buffer = new byte[64 * 1024];
  private int position;
  private int limit;
  private long deadline; // System.nanoTime() of the call under way
  private boolean reusable = true;
  private boolean answered; // a status line came in the call under way
  int status; // the status of the call under way, 0 until its status line came

  /**
   * Connects to `endpoint` within `deadline` (nanoTime): over TLS with `tls` for https, plainly for
   * http (`tls` null).
   */
  HttpConnection(URI endpoint, SSLSocketFactory tls, long deadline) throws IOException {
    final int port = endpoint.getPort() > 0 ? endpoint.getPort() : tls != null ? 443 : 80;
    final Socket plain = new Socket();
    try {
      plain.setTcpNoDelay(true);
      plain.connect(new InetSocketAddress(endpoint.getHost(), port), millisLeft(deadline));
      if (tls != null) {
        final SSLSocket secure =
            (SSLSocket) tls.createSocket(plain, endpoint.getHost(), port, true);
        final SSLParameters parameters = secure.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        secure.setSSLParameters(parameters);
        secure.setSoTimeout(millisLeft(deadline));
        secure.startHandshake();
        this.socket = secure;
      } else {
        this.socket = plain;
      }
      this.in = socket.getInputStream();
      this.out = socket.getOutputStream();
    } catch (IOException | RuntimeException e) {
      plain.close();
      throw e;
    }
  }

  /**
   * Sends `request` (a whole GET with its headers) and reads the answer by `deadline` (nanoTime):
   * a 200's body at most `limit` bytes, another status's cut at `errorLimit`.
   */
  Answer exchange(byte[] request, int limit, int errorLimit, long deadline) throws IOException {
    this.deadline = deadline;
    status = 0;
    answered = false;
    out.write(request);
    out.flush();
    String line = readLine();
    answered = true;
    if (!line.startsWith("HTTP/1.") || line.length() < 12 || line.charAt(8) != ' ') {
      throw new IOException("not an HTTP/1.x status line: '" + printable(line) + "'");
    }
    status = parseStatus(line.substring(9, 12));
    long length = -1;
    boolean chunked = false;
    String contentType = "";
    String issuer = "";
    for (int n = 0; !(line = readLine()).isEmpty(); n++) {
      if (n == MAX_HEADERS) throw new IOException("more than " + MAX_HEADERS + " header lines");
      final int colon = line.indexOf(':');
      if (colon <= 0) throw new IOException("a malformed header line: '" + printable(line) + "'");
      final String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      final String value = line.substring(colon + 1).trim();
      switch (name) {
        case "content-length" -> length = parseLength(value);
        case "transfer-encoding" -> chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
        case "connection" -> reusable &= !value.toLowerCase(Locale.ROOT).contains("close");
        case "content-type" -> contentType = value;
        case "snowid-issuer" -> issuer = value;
        default -> { }
      }
    }
    final boolean ok = status == 200;
    final byte[] body;
    if (chunked) {
      body = readChunked(ok ? limit : errorLimit, ok);
    } else if (length >= 0) {
      body = readLength(length, ok ? limit : errorLimit, ok);
    } else {
      reusable = false; // the body ends when the node closes the connection
      body = readToEnd(ok ? limit : errorLimit, ok);
    }
    return new Answer(status, contentType, issuer, body);
  }

  /** Whether a status line came in the last call (a failure after it is an answer not taken). */
  boolean answered() {
    return answered;
  }

  /** Whether the connection can carry another call. */
  boolean reusable() {
    return reusable && !socket.isClosed();
  }

  @Override
  public void close() {
    reusable = false;
    try {
      socket.close();
    } catch (IOException e) {
      // closing: nothing to do
    }
  }

  private byte[] readLength(long length, int bound, boolean strict) throws IOException {
    if (length > bound) {
      reusable = false;
      if (strict) {
        throw new TooLong("a body of " + length + " bytes, above the " + bound + " it may take");
      }
    }
    final byte[] body = new byte[(int) Math.min(length, bound)];
    readFully(body, 0, body.length);
    return body;
  }

  private byte[] readChunked(int bound, boolean strict) throws IOException {
    byte[] body = new byte[Math.min(bound, 8192)];
    int size = 0;
    for (;;) {
      final String line = readLine();
      final int end = line.indexOf(';');
      final long chunk;
      try {
        chunk = Long.parseLong((end < 0 ? line : line.substring(0, end)).trim(), 16);
      } catch (NumberFormatException e) {
        throw new IOException("a malformed chunk size: '" + printable(line) + "'");
      }
      if (chunk < 0) throw new IOException("a negative chunk size");
      if (chunk == 0) break;
      if (size + chunk > bound) {
        reusable = false;
        if (strict) throw new TooLong("a body longer than the " + bound + " bytes it may take");
        final int take = bound - size;
        body = Arrays.copyOf(body, bound);
        readFully(body, size, take);
        return body;
      }
      if (size + chunk > body.length) {
        body = Arrays.copyOf(body, (int) Math.min(bound, Math.max(size + chunk, 2L * body.length)));
      }
      readFully(body, size, (int) chunk);
      size += (int) chunk;
      if (!readLine().isEmpty()) throw new IOException("a chunk longer than it said");
    }
    while (!readLine().isEmpty()) { } // trailers
    return Arrays.copyOf(body, size);
  }

  private byte[] readToEnd(int bound, boolean strict) throws IOException {
    byte[] body = new byte[Math.min(bound, 8192)];
    int size = 0;
    for (;;) {
      if (position == limit && !fill()) return Arrays.copyOf(body, size);
      final int take = Math.min(limit - position, bound - size);
      if (take == 0) {
        if (strict) throw new TooLong("a body longer than the " + bound + " bytes it may take");
        return Arrays.copyOf(body, size);
      }
      if (size + take > body.length) {
        body = Arrays.copyOf(body, Math.min(bound, Math.max(size + take, 2 * body.length)));
      }
      System.arraycopy(buffer, position, body, size, take);
      position += take;
      size += take;
    }
  }

  private void readFully(byte[] into, int offset, int length) throws IOException {
    while (length > 0) {
      if (position == limit) {
        if (length >= buffer.length) { // straight into the body, past the buffer
          setTimeout();
          final int n = readSocket(into, offset, length);
          offset += n;
          length -= n;
          continue;
        }
        if (!fill()) throw new EOFException("the connection closed mid-body");
      }
      final int take = Math.min(limit - position, length);
      System.arraycopy(buffer, position, into, offset, take);
      position += take;
      offset += take;
      length -= take;
    }
  }

  // A line ending in LF (a CR before it dropped), as ISO-8859-1.
  private String readLine() throws IOException {
    final StringBuilder line = new StringBuilder();
    for (;;) {
      if (position == limit && !fill()) {
        throw new EOFException(answered ? "the connection closed mid-answer" : "no answer");
      }
      final byte b = buffer[position++];
      if (b == '\n') {
        final int n = line.length();
        if (n > 0 && line.charAt(n - 1) == '\r') line.setLength(n - 1);
        return line.toString();
      }
      if (line.length() == MAX_LINE) throw new IOException("a line longer than " + MAX_LINE);
      line.append((char) (b & 0xff));
    }
  }

  // More bytes into the buffer; false at the end of the stream.
  private boolean fill() throws IOException {
    setTimeout();
    final int n = readSocket(buffer, 0, buffer.length);
    if (n < 0) {
      reusable = false;
      return false;
    }
    position = 0;
    limit = n;
    return true;
  }

  private int readSocket(byte[] into, int offset, int length) throws IOException {
    try {
      final int n = in.read(into, offset, length);
      if (n < 0 && into != buffer) throw new EOFException("the connection closed mid-body");
      return n;
    } catch (SocketTimeoutException e) {
      reusable = false;
      throw new DeadlinePassed("no whole reply within the call deadline");
    }
  }

  private void setTimeout() throws IOException {
    socket.setSoTimeout(millisLeft(deadline));
  }

  // What is left until `deadline` in whole milliseconds, at least 1; DeadlinePassed if none is.
  private static int millisLeft(long deadline) throws DeadlinePassed {
    final long left = deadline - System.nanoTime();
    if (left <= 0) throw new DeadlinePassed("no whole reply within the call deadline");
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000));
  }

  private static int parseStatus(String digits) throws IOException {
    for (int i = 0; i < 3; i++) {
      if (digits.charAt(i) < '0' || digits.charAt(i) > '9') throw new IOException("a malformed status");
    }
    return Integer.parseInt(digits);
  }

  private static long parseLength(String value) throws IOException {
    if (value.isEmpty() || value.length() > 18 || !value.chars().allMatch(c -> c >= '0' && c <= '9')) {
      throw new IOException("a malformed Content-Length: '" + printable(value) + "'");
    }
    return Long.parseLong(value);
  }

  private static String printable(String text) {
    final String cut = text.length() > 80 ? text.substring(0, 80) + "…" : text;
    return new String(cut.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.US_ASCII)
        .replaceAll("[^\\x20-\\x7e]", "?");
  }
}
