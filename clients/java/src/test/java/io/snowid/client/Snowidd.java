/*
 * Snowidd: a real snowidd node for the tests and the benchmark, started on a loopback port the
 * kernel picks, with gRPC off and a fresh state directory, and stopped by its pid.
 *
 * The binary comes from the environment variable SNOWIDD (CMake passes its build of snowidd). The
 * port is read from the start-up line ("... http 127.0.0.1:PORT ..."), then GET /readyz must
 * answer 200 (with --tls-cert among the flags: the port must accept connections, and url() is
 * https). close() kills the process (SIGKILL, by pid) if it still runs and removes its
 * directory. Not thread-safe: one owner.
 */
package io.snowid.client;

import java.io.IOException;
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
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

final class Snowidd implements AutoCloseable {
  private static final Pattern HTTP_PORT = Pattern.compile(", http 127\\.0\\.0\\.1:(\\d+)");
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  final int datacenter;
  final int worker;
  private final Path dir;
  private final Path log;
  private final Process process;
  private final int port;
  private final boolean tls;

  /** Starts a node with datacenter id `datacenter`, worker id `worker` and `extra` flags. */
  Snowidd(int datacenter, int worker, String... extra) throws IOException, InterruptedException {
    this.datacenter = datacenter;
    this.worker = worker;
    this.dir = Files.createTempDirectory("snowid-java-test-");
    this.log = dir.resolve("snowidd.log");
    final List<String> command = new ArrayList<>(List.of(binary(), "--http", "127.0.0.1:0",
        "--grpc", "off", "--state-dir", dir.resolve("state").toString(),
        "--datacenter-id", Integer.toString(datacenter), "--worker-id", Integer.toString(worker)));
    command.addAll(List.of(extra));
    this.tls = command.contains("--tls-cert");
    this.process =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    try {
      this.port = waitForPort();
      waitUntilReady();
    } catch (IOException | InterruptedException | RuntimeException e) {
      close();
      throw e;
    }
  }

  static String binary() {
    final String binary = System.getenv("SNOWIDD");
    if (binary == null || binary.isEmpty()) {
      throw new IllegalStateException("set SNOWIDD to the snowidd binary");
    }
    return binary;
  }

  String url() {
    return (tls ? "https" : "http") + "://127.0.0.1:" + port;
  }

  long pid() {
    return process.pid();
  }

  /** GET path on this node; the status and the body. */
  HttpResponse<String> get(String path) throws IOException, InterruptedException {
    final HttpRequest request =
        HttpRequest.newBuilder(URI.create(url() + path)).timeout(Duration.ofSeconds(5)).build();
    return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
  }

  /** The value of a counter line of /metrics ("name{labels} value"); 0 if absent. */
  long metric(String line) throws IOException, InterruptedException {
    for (String row : get("/metrics").body().split("\n")) {
      if (row.startsWith(line + " ")) return (long) Double.parseDouble(row.substring(line.length() + 1));
    }
    return 0;
  }

  /** SIGKILL by pid (Process.destroyForcibly), and waits for the process to end. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(10, TimeUnit.SECONDS)) throw new IllegalStateException("snowidd survived SIGKILL");
  }

  /** SIGSTOP or SIGCONT by pid (`kill -STOP PID`). */
  void signal(String name) throws IOException, InterruptedException {
    new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).start().waitFor();
  }

  @Override
  public void close() throws IOException {
    if (process.isAlive()) {
      process.destroyForcibly();
      try {
        process.waitFor(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
    }
  }

  private int waitForPort() throws IOException, InterruptedException {
    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      final Matcher m = HTTP_PORT.matcher(Files.readString(log, StandardCharsets.UTF_8));
      if (m.find()) return Integer.parseInt(m.group(1));
      if (!process.isAlive()) break;
      Thread.sleep(20);
    }
    throw new IOException("snowidd did not start: " + Files.readString(log, StandardCharsets.UTF_8));
  }

  private void waitUntilReady() throws IOException, InterruptedException {
    final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try {
        if (tls) {
          new java.net.Socket("127.0.0.1", port).close();
          return;
        }
        if (get("/readyz").statusCode() == 200) return;
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(20);
    }
    throw new IOException("snowidd at " + url() + " never became ready");
  }
}
