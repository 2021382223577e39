/*
 * https:// endpoints: the client speaks TLS to a node started with --tls-cert, trusts what its
 * SSLContext trusts (sslContext(), else the JVM's default), and checks the certificate's name
 * against the endpoint's host:
 *
 *   - a context that trusts the node's certificate (made for IP 127.0.0.1), endpoint
 *     https://127.0.0.1:PORT: IDs;
 *   - the same, endpoint https://localhost:PORT (a name the certificate does not carry): refused;
 *   - the JVM's default context (whose trust store does not hold it): refused.
 *
 * The certificate is made here with openssl (Debian's openssl package).
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.Test;

public class TlsTest {
  @Test
  public void httpsEndpointsAreVerifiedByTrustAndName() throws Exception {
    final Path dir = Files.createTempDirectory("snowid-java-tls-");
    try {
      final Path cert = dir.resolve("cert.pem");
      final Path key = dir.resolve("key.pem");
      run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
          "-subj", "/CN=snowid-test", "-addext", "subjectAltName=IP:127.0.0.1",
          "-keyout", key.toString(), "-out", cert.toString());
      final SSLContext trusting = trusting(cert);
      try (Snowidd node =
          new Snowidd(0, 31, "--tls-cert", cert.toString(), "--tls-key", key.toString())) {
        final String port = node.url().substring(node.url().lastIndexOf(':') + 1);
        // Seconds to spare: the first TLS set-up and handshakes of a JVM on a loaded machine.
        final SnowidClientOptions.Builder patient = SnowidClientOptions.builder()
            .callDeadline(Duration.ofSeconds(3)).startWait(Duration.ofSeconds(10));
        try (SnowidClient client =
            SnowidClient.open(patient.endpoints(node.url()).sslContext(trusting).build())) {
          final long id = client.next();
          assertEquals(31, client.decode(id).worker());
        }
        assertRefused(SnowidClientOptions.builder().endpoints("https://localhost:" + port)
            .sslContext(trusting), "No name matching localhost");
        assertRefused(SnowidClientOptions.builder().endpoints(node.url()), "PKIX path");
      }
    } finally {
      try (var files = Files.walk(dir)) {
        for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
      }
    }
  }

  // The handshake fails: UNAVAILABLE, with the TLS error (`why`) in the message (3 s to spare for
  // the JVM default context's first load of its trust store).
  private static void assertRefused(SnowidClientOptions.Builder options, String why) {
    try (SnowidClient client = SnowidClient.open(options.callDeadline(Duration.ofSeconds(3))
        .startWait(Duration.ZERO).emptyWait(Duration.ofSeconds(3)).build())) {
      final SnowidException e = assertThrows(SnowidException.class, client::next);
      assertEquals(e.toString(), SnowidException.Code.UNAVAILABLE, e.code());
      assertTrue(e.toString(), e.getMessage().contains(why));
      assertEquals(0, client.stats().idsReceived());
    }
  }

  private static SSLContext trusting(Path cert) throws Exception {
    final KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    store.load(null, null);
    try (InputStream in = Files.newInputStream(cert)) {
      store.setCertificateEntry("node", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    final TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(store);
    final SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, trust.getTrustManagers(), null);
    return context;
  }

  private static void run(String... command) throws Exception {
    final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    final String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(String.join(" ", command) + ": " + out,
        process.waitFor(60, TimeUnit.SECONDS) && process.exitValue() == 0);
  }
}
