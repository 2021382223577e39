/*
 * The client's own HTTP/1.1 (HttpConnection, HttpTransport) against a scripted server on loopback:
 * the framings a node or a proxy may use (Content-Length, chunked with extensions and trailers, a
 * body that ends with the connection), keep-alive reuse, a kept-alive connection the server closed
 * meanwhile (asked again on a new one), Connection: close, and an error status's message.
 */
package io.snowid.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

public class HttpConnectionTest {
  private static final byte[] THREE = binary(7, 8, 9);

  private static byte[] binary(long... ids) {
    final ByteBuffer out = ByteBuffer.allocate(8 * ids.length).order(ByteOrder.LITTLE_ENDIAN);
    for (long id : ids) out.putLong(id);
    return out.array();
  }

  private static byte[] ascii(String text) {
    return text.getBytes(StandardCharsets.ISO_8859_1);
  }

  /** How one connection answers its requests, one answer (head and body bytes) per request. */
  private interface Script {
    List<byte[]> answers();
  }

  /** A server on loopback: each connection gets the next script; counts the connections. */
  private static final class Server implements AutoCloseable {
    final ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    final AtomicInteger connections = new AtomicInteger();
    private final Thread thread;

    Server(List<Script> scripts) throws Exception {
      thread = new Thread(() -> {
        try {
          for (Script script : scripts) {
            try (Socket s = socket.accept()) {
              connections.incrementAndGet();
              final BufferedReader in = new BufferedReader(
                  new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
              final OutputStream out = s.getOutputStream();
              for (byte[] answer : script.answers()) {
                for (String line; (line = in.readLine()) != null && !line.isEmpty(); ) { }
                out.write(answer);
                out.flush();
              }
            }
          }
        } catch (Exception e) {
          // closed
        }
      });
      thread.setDaemon(true);
      thread.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }

    @Override
    public void close() throws java.io.IOException {
      socket.close();
    }
  }

  private static HttpTransport transport() {
    return new HttpTransport(SnowidClientOptions.builder().endpoints("http://127.0.0.1:1").build());
  }

  private static byte[] answer(String head, byte[] body) {
    final byte[] h = ascii(head);
    final byte[] all = java.util.Arrays.copyOf(h, h.length + body.length);
    System.arraycopy(body, 0, all, h.length, body.length);
    return all;
  }

  private static final String OK = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n";

  @Test
  public void readsEveryFramingAndReusesKeptAliveConnections() throws Exception {
    final byte[] chunked = answer(OK + "Transfer-Encoding: chunked\r\nSnowid-Issuer: a1\r\n\r\n"
        + "5;ext=1\r\n", new byte[0]);
    final java.io.ByteArrayOutputStream c = new java.io.ByteArrayOutputStream();
    c.write(chunked);
    c.write(THREE, 0, 5);
    c.write(ascii("\r\n13\r\n"));
    c.write(THREE, 5, 19);
    c.write(ascii("\r\n0\r\nX-Trailer: t\r\n\r\n"));
    final byte[] lengthOne = answer(OK + "Content-Length: 24\r\n\r\n", THREE);
    final byte[] toTheEnd = answer(OK + "\r\n", binary(10, 11));
    try (Server server = new Server(List.of(
        () -> List.of(c.toByteArray(), lengthOne), // two answers on one connection
        () -> List.of(toTheEnd)))) { // no length: the body ends with the connection
      final HttpTransport transport = transport();
      final HttpTransport.Batch first = transport.ids(server.uri(), null, 3, true);
      assertArrayEquals(new long[] {7, 8, 9}, first.ids());
      assertEquals("a1", first.issuer());
      assertArrayEquals(new long[] {7, 8, 9}, transport.ids(server.uri(), null, 3, true).ids());
      assertEquals(1, server.connections.get());
      assertArrayEquals(new long[] {10, 11}, transport.ids(server.uri(), null, 3, true).ids());
      assertEquals(2, server.connections.get());
    }
  }

  @Test
  public void theBinaryMediaTypeIsReadWithoutCaseOrParameters() throws Exception {
    final String length = "Content-Length: 24\r\n\r\n";
    final byte[] upper = answer(
        "HTTP/1.1 200 OK\r\nContent-Type: Application/Octet-Stream\r\n" + length, THREE);
    final byte[] parameter = answer(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream ; q=1\r\n" + length, THREE);
    final byte[] json = answer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + length,
        THREE);
    try (Server server = new Server(List.of(() -> List.of(upper, parameter, json)))) {
      final HttpTransport transport = transport();
      for (int i = 0; i < 2; i++) {
        assertArrayEquals(new long[] {7, 8, 9}, transport.ids(server.uri(), null, 3, true).ids());
      }
      final HttpTransport.CallFailure f = assertThrows(HttpTransport.CallFailure.class,
          () -> transport.ids(server.uri(), null, 3, true));
      assertTrue(f.getMessage(), f.getMessage().contains("Content-Type 'application/json'"));
    }
  }

  @Test
  public void aConnectionTheServerClosedIsAskedAgainOnANewOne() throws Exception {
    final byte[] keep = answer(OK + "Content-Length: 24\r\n\r\n", THREE);
    final byte[] close = answer(OK + "Content-Length: 24\r\nConnection: close\r\n\r\n", THREE);
    try (Server server = new Server(List.of(
        () -> List.of(keep), // then closed without a word
        () -> List.of(close), // says it closes: not reused
        () -> List.of(keep)))) {
      final HttpTransport transport = transport();
      for (int i = 0; i < 3; i++) {
        assertArrayEquals(new long[] {7, 8, 9}, transport.ids(server.uri(), null, 3, true).ids());
      }
      assertEquals(3, server.connections.get());
    }
  }

  @Test
  public void anErrorStatusIsTheCallersWithItsMessage() throws Exception {
    final byte[] body = ascii("{\"error\":\"unknown tag 'x'\"}");
    try (Server server = new Server(List.of(() -> List.of(answer(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: "
            + body.length + "\r\n\r\n", body))))) {
      final HttpTransport.CallFailure f = assertThrows(HttpTransport.CallFailure.class,
          () -> transport().ids(server.uri(), "x", 3, true));
      assertEquals(SnowidException.Code.NOT_FOUND, f.code);
      assertTrue(f.refused);
      assertTrue(f.getMessage(), f.getMessage().contains("HTTP 404: unknown tag 'x'"));
    }
  }
}
