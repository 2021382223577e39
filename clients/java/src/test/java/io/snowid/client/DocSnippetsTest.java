/*
 * Every ```java block of the documentation (the files the system property snowid.docs names:
 * docs/clients.md and clients/java/README.md) compiles against the client and runs against two live
 * nodes, as a reader would copy it:
 *
 *   - a block that declares a class is compiled as it stands and its main() run;
 *   - any other block is a method body (after its import lines), run once with `token` = "".
 *
 * Before compiling, the endpoints the documentation shows (http://10.0.0.1:8080, http://10.0.0.2:8080
 * and the two local nodes http://127.0.0.1:8080, http://127.0.0.1:8081) become the live nodes' URLs,
 * and the JDBC example's database URL the PostgreSQL that clients/java/test.sh starts
 * (clients/testing/postgres.sh; POSTGRES_PORT). The JDBC example's rows are then checked: as many
 * as it inserted, each keyed by a distinct ID issued by one of the two nodes. The nodes share one
 * SQLite segment store, create segment tags on first use, and know the tag "invoices" with the
 * template INV-{yyyyMMdd}-{seq:06} (made over POST /v1/tags), for the business-ID example.
 */
package io.snowid.client;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.Test;

public class DocSnippetsTest {
  private static final Pattern BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);
  private static final Pattern CLASS = Pattern.compile("(?m)^public class (\\w+)");
  private static final String DOCUMENTED_DATABASE = "jdbc:postgresql://127.0.0.1:5432/app?user=app";

  /** A block and where it is. */
  private record Snippet(String where, String code) {}

  @Test
  public void everyJavaBlockCompilesAndRunsAgainstLiveNodes() throws Exception {
    final List<Snippet> snippets = snippets();
    assertTrue("no ```java block found in " + System.getProperty("snowid.docs"), snippets.size() >= 3);
    final String port = System.getenv("POSTGRES_PORT");
    assertTrue("set POSTGRES_PORT (clients/java/test.sh starts PostgreSQL with "
        + "clients/testing/postgres.sh)", port != null && !port.isEmpty());
    final String database = "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
    final Path work = Files.createTempDirectory("snowid-java-snippets-");
    final String store = "sqlite://" + work.resolve("segments.db").toAbsolutePath();
    try (Snowidd a = new Snowidd(0, 11, "--segment-auto-create", "true", "--segment-store", store);
        Snowidd b = new Snowidd(0, 12, "--segment-auto-create", "true", "--segment-store", store)) {
      createInvoices(a);
      int n = 0;
      boolean jdbc = false;
      for (Snippet snippet : snippets) {
        final String code = snippet.code()
            .replace("http://10.0.0.1:8080", a.url()).replace("http://10.0.0.2:8080", b.url())
            .replace("http://127.0.0.1:8080", a.url()).replace("http://127.0.0.1:8081", b.url())
            .replace(DOCUMENTED_DATABASE, database);
        final Path out = work.resolve("snippet" + ++n);
        run(snippet.where(), compile(snippet.where(), code, n, out), out);
        if (snippet.code().contains(DOCUMENTED_DATABASE)) {
          jdbc = true;
          checkOrders(database, a, b);
        }
      }
      assertTrue("no block uses " + DOCUMENTED_DATABASE + " (the JDBC example)", jdbc);
    } finally {
      try (var files = Files.walk(work)) {
        for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) Files.delete(p);
      }
    }
  }

  private static List<Snippet> snippets() throws Exception {
    final List<Snippet> snippets = new ArrayList<>();
    for (String file : System.getProperty("snowid.docs", "").split(",")) {
      if (file.isEmpty()) continue;
      final String text = Files.readString(Path.of(file));
      final Matcher m = BLOCK.matcher(text);
      while (m.find()) {
        final int line = text.substring(0, m.start()).split("\n", -1).length;
        snippets.add(new Snippet(file + ":" + line, m.group(1)));
      }
    }
    return snippets;
  }

  // The class to run: the block's own, or the block as the body of Snippet<n>.run(String token).
  private static String compile(String where, String code, int n, Path out) throws Exception {
    final Matcher declared = CLASS.matcher(code);
    final String name;
    final String unit;
    if (declared.find()) {
      name = declared.group(1);
      unit = code;
    } else {
      name = "Snippet" + n;
      final StringBuilder imports = new StringBuilder("import io.snowid.client.*;\n");
      final StringBuilder body = new StringBuilder();
      for (String line : code.split("\n")) {
        (line.startsWith("import ") ? imports : body).append(line).append('\n');
      }
      unit = imports + "public class " + name + " {\n  public static void run(String token)"
          + " throws Exception {\n" + body + "  }\n}\n";
    }
    Files.createDirectories(out);
    final Path source = out.resolve(name + ".java");
    Files.writeString(source, unit);
    final JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    final java.io.ByteArrayOutputStream errors = new java.io.ByteArrayOutputStream();
    final int status = javac.run(null, errors, errors,
        "-classpath", classPath(), "-d", out.toString(), "-Xlint:all", source.toString());
    assertEquals(where + " does not compile:\n" + unit + errors, 0, status);
    return name;
  }

  private static void run(String where, String name, Path out) throws Exception {
    try (URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()},
        DocSnippetsTest.class.getClassLoader())) {
      final Class<?> type = loader.loadClass(name);
      try {
        final Method main = type.getMethod("main", String[].class);
        main.invoke(null, (Object) new String[0]);
      } catch (NoSuchMethodException e) {
        type.getMethod("run", String.class).invoke(null, "");
      } catch (java.lang.reflect.InvocationTargetException e) {
        throw new AssertionError(where + " failed: " + e.getCause(), e.getCause());
      }
    }
  }

  // The tag of the business-ID example: POST /v1/tags (the nodes have no tokens: anyone may).
  private static void createInvoices(Snowidd node) throws Exception {
    final String tag = "{\"tag\": \"invoices\", \"step\": 100, "
        + "\"template\": \"INV-{yyyyMMdd}-{seq:06}\", \"zone\": \"UTC\"}";
    final HttpResponse<String> created = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create(node.url() + "/v1/tags"))
            .POST(HttpRequest.BodyPublishers.ofString(tag)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(created.body(), 201, created.statusCode());
  }

  // The JDBC example's table: its rows, each keyed by a distinct ID of node a or b.
  private static void checkOrders(String database, Snowidd a, Snowidd b) throws Exception {
    try (Connection db = DriverManager.getConnection(database);
        Statement query = db.createStatement();
        SnowidClient decoder = SnowidClient.open(
            SnowidClientOptions.builder().endpoints(a.url()).build())) {
      final ResultSet rows = query.executeQuery("SELECT id FROM orders ORDER BY id");
      final java.util.Set<Long> seen = new java.util.HashSet<>();
      while (rows.next()) {
        final long id = rows.getLong(1);
        assertTrue("ID " + id + " twice", seen.add(id));
        final long worker = decoder.decode(id).worker();
        assertTrue("ID " + id + " of worker " + worker, worker == a.worker || worker == b.worker);
      }
      assertEquals("rows in orders", 1000, seen.size());
      query.execute("DROP TABLE orders");
    }
  }

  // The client's classes and the PostgreSQL driver, wherever the build put them.
  private static String classPath() throws Exception {
    return location(SnowidClient.class) + File.pathSeparator + location(org.postgresql.Driver.class);
  }

  private static String location(Class<?> type) throws Exception {
    return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
  }
}
