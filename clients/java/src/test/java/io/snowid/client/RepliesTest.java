/*
 * The strict reader of snowidd's replies: the shapes it accepts, and the malformed or unexpected
 * replies it refuses rather than misreads.
 */
package io.snowid.client;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.snowid.client.JsonReader.JsonException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.Test;

public class RepliesTest {
  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static long[] ids(String text, int count) throws JsonException {
    return Replies.ids(bytes(text), count);
  }

  @Test
  public void readsABatchOfOneToTheCountAskedFor() throws JsonException {
    assertArrayEquals(
        new long[] {0, 7, 9223372036854775807L},
        ids(" {\"ids\" : [\"0\", \"7\",\"9223372036854775807\"]}\n", 3));
    assertArrayEquals(new long[] {1}, ids("{\"ids\":[\"1\"]}", 1));
    assertArrayEquals(new long[] {1, 2}, ids("{\"ids\":[\"1\",\"2\"]}", 3)); // fewer: taken
  }

  // docs/clients.md: members beside "ids" are ignored (a later node may add some).
  @Test
  public void ignoresMembersBesideIds() throws JsonException {
    assertArrayEquals(new long[] {1, 2, 3},
        ids("{\"issuer\":\"a1\",\"ids\":[\"1\",\"2\",\"3\"],\"more\":{\"x\":[1,2.5]}}", 3));
  }

  private static byte[] littleEndian(long... numbers) {
    final java.nio.ByteBuffer out =
        java.nio.ByteBuffer.allocate(8 * numbers.length).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    for (long n : numbers) out.putLong(n);
    return out.array();
  }

  // docs/clients.md, "Binary batches": 8 bytes a number, little-endian, 1 to N of them, each
  // below 2^63, strictly increasing.
  @Test
  public void readsABinaryBatchAndRefusesWhatBreaksTheRule() throws JsonException {
    assertArrayEquals(new long[] {0, 7, Long.MAX_VALUE},
        Replies.binaryIds(littleEndian(0, 7, Long.MAX_VALUE), 3));
    assertArrayEquals(new long[] {1, 2}, Replies.binaryIds(littleEndian(1, 2), 3));
    assertArrayEquals(new long[] {0x0102030405060708L},
        Replies.binaryIds(new byte[] {8, 7, 6, 5, 4, 3, 2, 1}, 1));
    final byte[][] bad = {
      new byte[0], // none
      littleEndian(1, 2, 3, 4), // more than asked for
      java.util.Arrays.copyOf(littleEndian(1, 2), 13), // not a whole number of 8-byte numbers
      littleEndian(1, 3, 3), // not strictly increasing
      littleEndian(3, 2, 1), // descending
      littleEndian(1, 2, Long.MIN_VALUE), // 2^63 (the sign bit)
      littleEndian(1, -5), // negative
    };
    for (byte[] body : bad) {
      assertThrows(java.util.Arrays.toString(body), JsonException.class,
          () -> Replies.binaryIds(body, 3));
    }
  }

  // docs/clients.md, "What a client accepts": each form a node or a proxy might send instead.
  @Test
  public void refusesABatchThatBreaksTheRule() {
    final String[] bad = {
      "{\"ids\":[]}", // none
      "{\"ids\":[\"1\",\"2\",\"3\",\"4\"]}", // more than asked for
      "{\"ids\":[\"1\",\"3\",\"3\"]}", // not strictly increasing
      "{\"ids\":[\"3\",\"2\",\"1\"]}", // descending
      "{\"ids\":[\"1\",\"2\",\"3\",]}", // trailing comma
      "{\"ids\":[\"1\",\"2\" \"3\"]}", // no comma
      "{\"ids\":[\"1\",\"2\",3]}", // a JSON number, not a string
      "{\"ids\":[\"1\",\"2\",3.5]}", // a float
      "{\"ids\":[\"1\",\"2\",\"03\"]}", // leading zero
      "{\"ids\":[\"1\",\"2\",\"-3\"]}", // a sign
      "{\"ids\":[\"1\",\"2\",\"+3\"]}", // a plus sign
      "{\"ids\":[\"1\",\"2\",\"9223372036854775808\"]}", // 2^63
      "{\"ids\":[\"1\",\"2\",\"18446744073709551616\"]}", // 2^64
      "{\"ids\":[\"1\",\"2\",\"3 \"]}", // not only digits
      "{\"ids\":[\"1\",\"2\",\" 3\"]}", // padded
      "{\"ids\":[\"1\",\"2\",\"0x3\"]}", // hex
      "{\"ids\":[\"1\",\"2\",\"3_0\"]}", // an underscore
      "{\"ids\":[\"1\",\"2\",\"\u0663\"]}", // an Arabic-Indic digit
      "{\"ids\":[\"1\",\"2\",\"\\u0033\"]}", // an escaped digit
      "{\"ids\":[\"1\",\"2\",\"\"]}", // empty
      "{\"ids\":[\"1\",\"2\"],\"ids\":[\"3\"]}", // ids twice
      "{\"ids\":[\"1\",\"2\",\"3\"],\"more\":01}", // a member beside ids, malformed
      "{\"id\":[\"1\",\"2\",\"3\"]}", // another name
      "{\"ids\":[\"1\",\"2\",\"3\"]}x", // bytes after the document
      "{\"ids\":[\"1\",\"2\",\"3\"]", // cut short
      "[\"1\",\"2\",\"3\"]", // not an object
      "<html><body>It works!</body></html>",
      "",
    };
    for (String text : bad) {
      assertThrows(text, JsonException.class, () -> ids(text, 3));
    }
  }

  @Test
  public void readsTheLayoutAndMaxBatchOfInfoAndSkipsTheRest() throws JsonException {
    final String info =
        "{\"version\":\"1.2\",\"layout\":{\"timestamp_bits\":41,\"datacenter_bits\":5,"
            + "\"worker_bits\":5,\"sequence_bits\":12,\"time_unit_ms\":1,\"epoch_ms\":1288834974657,"
            + "\"epoch\":\"2010-11-04T01:42:54.657Z\",\"sequence_position\":\"low\","
            + "\"ids_per_second\":4.096e6,\"warning\":null},\"max_batch\":10000,"
            + "\"cluster\":{\"coordinator\":\"static\",\"tags\":[1,-2.5E-3,true,false,null,"
            + "{\"a\":[]}]},\"segment\":null,\"name\":\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\"}";
    final Replies.NodeInfo read = Replies.info(bytes(info));
    assertEquals(10000, read.maxBatch());
    assertEquals(new Layout(41, 5, 5, 12, 1, 1288834974657L, false), read.layout());
  }

  @Test
  public void refusesAnInfoWithoutAValidLayout() {
    final String layout =
        "\"layout\":{\"timestamp_bits\":41,\"datacenter_bits\":5,\"worker_bits\":5,"
            + "\"sequence_bits\":12,\"time_unit_ms\":1,\"epoch_ms\":0,\"sequence_position\":\"%s\"}";
    final String[] bad = {
      "{}",
      "{" + layout.formatted("middle") + "}", // unknown position
      "{" + layout.formatted("low").replace("41", "42") + "}", // 64 bits
      "{" + layout.formatted("low").replace("\"time_unit_ms\":1", "\"time_unit_ms\":1.5") + "}",
      "{" + layout.formatted("low").replace(",\"epoch_ms\":0", "") + "}", // a field missing
      "{" + layout.formatted("low") + "," + layout.formatted("low") + "}", // twice
      "{" + layout.formatted("low") + ",\"x\":01}", // leading zero in a skipped member
      "{" + layout.formatted("low") + ",\"x\":\"\u0001\"}", // control character
      "{" + layout.formatted("low") + ",\"x\":\"\\x\"}", // unknown escape
      "{" + layout.formatted("low") + ",\"x\":\"\\ud83d\"}", // lone surrogate
      "{" + layout.formatted("low") + ",\"x\":tru}",
      "{" + layout.formatted("low") + ",\"x\":1.}",
      "{" + layout.formatted("low") + ",\"x\":[1,]}",
      "{" + layout.formatted("low") + ",}",
      "[".repeat(100) + "]".repeat(100), // too deep
    };
    for (String text : bad) {
      assertThrows(text, JsonException.class, () -> Replies.info(bytes(text)));
    }
    final byte[] badUtf8 = bytes("{" + layout.formatted("low") + ",\"x\":\"..\"}");
    badUtf8[badUtf8.length - 4] = (byte) 0xc3; // a lead byte followed by '.'
    assertThrows(JsonException.class, () -> Replies.info(badUtf8));
  }

  private static List<String> business(String text, int count) throws JsonException {
    return Replies.businessIds(bytes(text), "orders", count);
  }

  @Test
  public void readsABusinessBatchOfExactlyTheCountForTheTagAsked() throws JsonException {
    assertEquals(List.of("ORD-20261202-000001", "ORD-20261202-000002"),
        business("{\"ids\":[\"ORD-20261202-000001\",\"ORD-20261202-000002\"],"
            + "\"tag\":\"orders\"}", 2));
    assertEquals(List.of("é-1"),
        business(" {\"tag\" : \"orders\", \"ids\" : [\"\\u00e9-1\"]}\n", 1));
    final String longest = "x".repeat(Replies.MAX_BUSINESS_ID_BYTES);
    assertEquals(List.of(longest),
        business("{\"tag\":\"orders\",\"ids\":[\"" + longest + "\"]}", 1));
    assertEquals(List.of("a/b"),
        Replies.businessIds(bytes("{\"tag\":\"ord/x y\",\"ids\":[\"a/b\"]}"), "ord/x y", 1));
  }

  @Test
  public void refusesABusinessBatchThatBreaksTheRule() {
    final String tooLong = "x".repeat(Replies.MAX_BUSINESS_ID_BYTES + 1);
    final String tooLongInBytes = "é".repeat(Replies.MAX_BUSINESS_ID_BYTES / 2) + "x"; // 257 bytes
    for (String body : List.of(
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A1\",\"A2\"]}", // a duplicate
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\"]}", // fewer than asked
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\",\"A4\"]}", // more
        "{\"tag\":\"orders\",\"ids\":[]}",
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"\",\"A3\"]}", // empty
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A\\u0000\",\"A3\"]}", // NUL
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A\\n\",\"A3\"]}", // newline
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A\\u007f\",\"A3\"]}", // DEL
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A\\u0085\",\"A3\"]}", // C1 (NEL)
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"" + tooLong + "\",\"A3\"]}",
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"" + tooLongInBytes + "\",\"A3\"]}",
        "{\"tag\":\"orders\",\"ids\":[\"A1\",2,\"A3\"]}", // a number
        "{\"tag\":\"orders\",\"ids\":[\"A1\",null,\"A3\"]}",
        "{\"tag\":\"orders\",\"ids\":\"A1\"}",
        "{\"tag\":\"orders\",\"id\":\"A1\"}", // the single shape, not asked for
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\"],\"x\":[1]}", // an extra member
        "{\"ids\":[\"A1\",\"A2\",\"A3\"]}", // no tag
        "{\"tag\":\"invoices\",\"ids\":[\"A1\",\"A2\",\"A3\"]}", // another tag
        "{\"tag\":1,\"ids\":[\"A1\",\"A2\",\"A3\"]}",
        "{\"tag\":\"orders\",\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\"]}",
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\"],\"ids\":[\"A4\",\"A5\",\"A6\"]}",
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\"]", // truncated
        "{\"tag\":\"orders\",\"ids\":[\"A1\",\"A2\",\"A3\"]} x",
        "[\"A1\",\"A2\",\"A3\"]",
        "<html>ok</html>")) {
      assertThrows(body, JsonException.class, () -> business(body, 3));
    }
    final byte[] badUtf8 = bytes("{\"tag\":\"orders\",\"ids\":[\"A.\"]}");
    badUtf8[badUtf8.length - 5] = (byte) 0xc3; // a lead byte followed by '.'
    assertThrows(JsonException.class, () -> Replies.businessIds(badUtf8, "orders", 1));
  }

  @Test
  public void errorMessagesComeFromTheErrorShapeOrTheRawBody() {
    assertEquals("unknown tag 'x'", Replies.errorMessage(bytes("{\"error\":\"unknown tag 'x'\"}\n")));
    assertEquals("<html>bad gateway</html>", Replies.errorMessage(bytes("<html>bad gateway</html>")));
    assertTrue(Replies.errorMessage(bytes("x".repeat(500))).length() < 250);
  }

  @Test
  public void tagsArePercentEncodedByteByByte() {
    assertEquals("order%3Apay", HttpTransport.percentEncode("order:pay"));
    assertEquals("a.b-c_d~e", HttpTransport.percentEncode("a.b-c_d~e"));
    assertEquals("%C3%A9%20%2F%3F", HttpTransport.percentEncode("é /?"));
    assertFalse(HttpTransport.percentEncode("x/y").contains("/"));
  }
}
