/*
 * Ready at start (docs/clients.md, "Bounded wait"): 20 cold starts against a live node, each a new
 * client with default options whose first next() comes right away, 5 of them in fresh JVMs (the
 * HTTP classes not loaded yet, as at an application's start-up) and 15 in this one: no call fails.
 * Without startWait a cold JVM's first call outlasts the 200 ms emptyWait (open() and the first
 * refill took 600 ms and 300 ms on 2 loaded cores). The times are printed, for the README.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.Test;

public class ColdStartTest {
  private static final int FRESH_JVMS = 5;
  private static final int IN_PROCESS = 15;

  @Test
  public void twentyColdStartsWithDefaultOptionsFailNoCall() throws Exception {
    try (Snowidd node = new Snowidd(0, 1)) {
      final List<String> errors = new ArrayList<>();
      final List<Long> firstCalls = new ArrayList<>();
      for (int i = 0; i < FRESH_JVMS; i++) {
        final Process java = new ProcessBuilder(javaBinary(), "-cp", classPath(),
            ColdStart.class.getName(), node.url()).redirectErrorStream(true).start();
        final String out =
            new String(java.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue("a cold start outlived 30 s", java.waitFor(30, TimeUnit.SECONDS));
        System.out.println("cold start in a fresh JVM: " + out);
        if (java.exitValue() != 0 || !out.startsWith("ok ")) {
          errors.add(out);
        } else {
          firstCalls.add(Long.parseLong(out.split(" ")[1]) + Long.parseLong(out.split(" ")[2]));
        }
      }
      for (int i = 0; i < IN_PROCESS; i++) {
        try {
          final long[] times = ColdStart.once(node.url());
          firstCalls.add((times[0] + times[1]) / 1_000_000);
        } catch (SnowidException e) {
          errors.add(e.toString());
        }
      }
      System.out.println("open() and first next(), ms (5 fresh JVMs, then 15 in process): "
          + firstCalls);
      assertEquals(List.of(), errors);
      assertEquals(FRESH_JVMS + IN_PROCESS, firstCalls.size());
    }
  }

  private static String javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  // The client's classes and this test's (ColdStart needs nothing else), wherever they were built.
  private static String classPath() throws Exception {
    return Path.of(SnowidClient.class.getProtectionDomain().getCodeSource().getLocation().toURI())
        + File.pathSeparator
        + Path.of(ColdStart.class.getProtectionDomain().getCodeSource().getLocation().toURI());
  }
}
