/*
 * ColdStart: one cold start of a SnowidClient, as an application's start-up makes it: a new client
 * with default options but its endpoints, and a first next() right away. ColdStartTest runs it in
 * fresh JVMs (java -cp CLASSES io.snowid.client.ColdStart URL...), where the HTTP classes are not
 * loaded yet either, and in process.
 *
 * Prints "ok OPEN_MS FIRST_MS ID" (open() and the first next() in milliseconds) and exits 0, or
 * prints the error and exits 1.
 */
package io.snowid.client;

final class ColdStart {
  private ColdStart() {}

  /** open() and the first next() of a new client with default options: {open ns, first ns, id}. */
  static long[] once(String... endpoints) {
    return once(SnowidClientOptions.builder().endpoints(endpoints));
  }

  private static long[] once(SnowidClientOptions.Builder options) {
    final long began = System.nanoTime();
    final SnowidClient client = SnowidClient.open(options.build());
    try (client) {
      final long opened = System.nanoTime();
      final long id;
      try {
        id = client.next();
      } catch (SnowidException e) {
        throw new SnowidException(e.code(), e.getMessage() + " (after "
            + (System.nanoTime() - began) / 1_000_000 + " ms, " + client.stats() + ")");
      }
      final long first = System.nanoTime();
      return new long[] {opened - began, first - opened, id};
    }
  }

  public static void main(String[] args) {
    try {
      final long[] times = once(args);
      System.out.printf("ok %d %d %d%n", times[0] / 1_000_000, times[1] / 1_000_000, times[2]);
    } catch (RuntimeException e) {
      System.out.println("error " + e);
      System.exit(1);
    }
  }
}
