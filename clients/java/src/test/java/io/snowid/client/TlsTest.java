/*
 * https:// endpoints: the client speaks TLS to a node started with --tls-cert, trusts what the
 * JVM's trust store trusts, and checks the certificate's name against the endpoint's host. Each
 * case is a cold start in a fresh JVM (ColdStart, with a call deadline of 3 s and a long start
 * wait: a cold JVM's TLS set-up and first handshake took 1.6 s on a loaded machine) given a trust
 * store of its own, the three at once:
 *
 *   - the node's certificate (for IP 127.0.0.1) trusted, endpoint https://127.0.0.1:PORT: IDs;
 *   - the same, endpoint https://localhost:PORT (a name the certificate does not carry): refused;
 *   - the JVM's default trust store (which does not hold it): refused.
 *
 * The certificate is made here with openssl (Debian's openssl package) and imported with keytool.
 */
package io.snowid.client;

import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

public class TlsTest {
  @Test
  public void httpsEndpointsAreVerifiedByTrustAndName() throws Exception {
    final Path dir = Files.createTempDirectory("snowid-java-tls-");
    try {
      final Path cert = dir.resolve("cert.pem");
      final Path key = dir.resolve("key.pem");
      final Path trust = dir.resolve("trust.p12");
      run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
          "-subj", "/CN=snowid-test", "-addext", "subjectAltName=IP:127.0.0.1",
          "-keyout", key.toString(), "-out", cert.toString());
      run(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(), "-importcert",
          "-noprompt", "-alias", "node", "-file", cert.toString(), "-keystore", trust.toString(),
          "-storetype", "PKCS12", "-storepass", "changeit");
      try (Snowidd node = new Snowidd(0, 31, "--tls-cert", cert.toString(), "--tls-key", key.toString())) {
        final String port = node.url().substring(node.url().lastIndexOf(':') + 1);
        // The three at once (each mostly waits): the refusals wait out a start wait of 8 s.
        final Process trusted = coldStart(trust, 10_000, node.url());
        final Process wrongName = coldStart(trust, 8_000, "https://localhost:" + port);
        final Process untrusted = coldStart(null, 8_000, node.url());
        final String ok = output(trusted);
        assertTrue(ok, ok.startsWith("ok "));
        for (Process refused : List.of(wrongName, untrusted)) {
          final String error = output(refused);
          assertTrue(error, error.startsWith("error") && error.contains("UNAVAILABLE")
              && error.contains("SSLHandshakeException"));
        }
      }
    } finally {
      try (var files = Files.walk(dir)) {
        for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
      }
    }
  }

  // ColdStart in a fresh JVM with `trust` as its trust store (null: the JVM's own), a call deadline
  // of 3 s and a start wait of `startWaitMs`.
  private static Process coldStart(Path trust, long startWaitMs, String endpoint) throws Exception {
    final List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    if (trust != null) {
      command.addAll(List.of("-Djavax.net.ssl.trustStore=" + trust,
          "-Djavax.net.ssl.trustStoreType=PKCS12", "-Djavax.net.ssl.trustStorePassword=changeit"));
    }
    command.addAll(List.of("-cp", location(SnowidClient.class) + File.pathSeparator
        + location(ColdStart.class), ColdStart.class.getName(), "--call-deadline-ms=3000",
        "--start-wait-ms=" + startWaitMs, endpoint));
    return new ProcessBuilder(command).redirectErrorStream(true).start();
  }

  private static String output(Process java) throws Exception {
    final String out = new String(java.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue("a cold start outlived 30 s", java.waitFor(30, TimeUnit.SECONDS));
    return out.strip();
  }

  private static void run(String... command) throws Exception {
    final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    final String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(String.join(" ", command) + ": " + out,
        process.waitFor(60, TimeUnit.SECONDS) && process.exitValue() == 0);
  }

  private static String location(Class<?> type) throws Exception {
    return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
  }
}
