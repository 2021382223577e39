/*
 * HostileNode: tests/support/hostile_node.py, the hostile stand-in for a snowidd node that every
 * client is tested against, started in one MODE on a loopback port it picks (the first line of its
 * output) and stopped by its pid (SIGTERM, then SIGKILL). It serves for at most five minutes on
 * its own, so a crashed test leaves nothing running for long.
 *
 * The script's path comes from the system property snowid.hostileNode (test.sh sets it); it runs
 * under the interpreter that `python3` names on the PATH, resolved once (a version manager's shim
 * can take most of a second per start). Not thread-safe: one owner.
 */
package io.snowid.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

final class HostileNode implements AutoCloseable {
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static String python; // the interpreter behind `python3`, once resolved

  final String mode;
  private final Process process;
  private final int port;

  HostileNode(String mode) throws IOException {
    this.mode = mode;
    this.process =
        new ProcessBuilder(python(), script(), mode, "--lifetime", "300")
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    final BufferedReader out =
        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    final String first = out.readLine();
    if (first == null || !first.matches("\\d+")) {
      close();
      throw new IOException("hostile_node.py " + mode + " did not start: " + first);
    }
    this.port = Integer.parseInt(first);
  }

  private static synchronized String python() throws IOException {
    if (python == null) {
      final Process which = new ProcessBuilder("python3", "-c", "import sys; print(sys.executable)")
          .redirectError(ProcessBuilder.Redirect.INHERIT).start();
      final String path = new String(which.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      python = path.isEmpty() ? "python3" : path;
    }
    return python;
  }

  private static String script() {
    final String path = System.getProperty("snowid.hostileNode");
    if (path == null || path.isEmpty()) {
      throw new IllegalStateException("set -Dsnowid.hostileNode to tests/support/hostile_node.py");
    }
    return path;
  }

  String url() {
    return "http://127.0.0.1:" + port;
  }

  /** How many batches it was asked for (GET /hostile/stats, "id_requests"). */
  long idRequests() throws Exception {
    final HttpRequest request = HttpRequest.newBuilder(URI.create(url() + "/hostile/stats"))
        .timeout(Duration.ofSeconds(5)).build();
    final byte[] body = HTTP.send(request, HttpResponse.BodyHandlers.ofByteArray()).body();
    final JsonReader reader = new JsonReader(body);
    long requests = -1;
    reader.beginObject();
    while (reader.hasNext()) {
      if (reader.nextName().equals("id_requests")) {
        requests = reader.nextLong();
      } else {
        reader.skipValue();
      }
    }
    reader.endObject();
    return requests;
  }

  @Override
  public void close() {
    process.destroy();
    try {
      if (!process.waitFor(5, TimeUnit.SECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
