/*
 * Replies: the three reply shapes of snowidd's HTTP API the client reads, each read strictly with
 * JsonReader (anything else is a JsonException: the node's reply is not trusted).
 *
 *   GET /v1/ids?count=N, GET /v1/segment/{tag}?count=N   {"ids":["…",…]}  (1 to N IDs, each plain
 *                                                         decimal below 2^63, strictly increasing;
 *                                                         other members skipped)
 *   the same with &format=binary                          8 bytes a number, little-endian: 1 to N
 *                                                         numbers below 2^63, strictly increasing
 *   GET /v1/business/{tag}?count=N                        {"tag":"…","ids":["…",…]} (the tag
 *                                                         asked, exactly N distinct IDs, each 1 to
 *                                                         256 bytes without control characters;
 *                                                         other members skipped)
 *   any 4xx/5xx                                           {"error":"…"}
 *   GET /v1/info                                          an object whose "layout" object gives the
 *                                                         bit widths, unit, epoch and sequence
 *                                                         position; "max_batch" if the node says it
 *
 * Stateless: safe from any thread.
 */
package io.snowid.client;

import io.snowid.client.JsonReader.JsonException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

final class Replies {
  private Replies() {}

  /** What a node's /v1/info says that the client uses. maxBatch: 0 if the node does not say. */
  record NodeInfo(Layout layout, long maxBatch) {}

  /**
   * {"ids":[…]} with 1 to `count` IDs, each a JSON string of plain ASCII decimal digits (no sign,
   * space, leading zero but "0" itself, escape or other digit) below 2^63, strictly increasing: the
   * batch docs/clients.md ("What a client accepts") allows, but for its order across batches.
   * Members beside "ids" are skipped (a later node may add some; their grammar is still checked);
   * "ids" twice is refused.
   */
  static long[] ids(byte[] body, int count) throws JsonException {
    final JsonReader reader = new JsonReader(body);
    long[] ids = null;
    int n = 0;
    reader.beginObject();
    while (reader.hasNext()) {
      if (!reader.nextName().equals("ids")) {
        reader.skipValue();
        continue;
      }
      if (ids != null) throw new JsonException("\"ids\" twice");
      ids = new long[count];
      reader.beginArray();
      while (reader.hasNext()) {
        if (n == count) throw new JsonException("more than the " + count + " IDs asked for");
        ids[n] = reader.nextId();
        if (n > 0 && ids[n] <= ids[n - 1]) throw new JsonException("IDs not strictly increasing");
        n++;
      }
      reader.endArray();
    }
    reader.endObject();
    reader.endDocument();
    if (ids == null) throw new JsonException("expected {\"ids\":[…]}");
    if (n == 0) throw new JsonException("no IDs");
    return n == count ? ids : Arrays.copyOf(ids, n);
  }

  /**
   * A format=binary batch: 1 to `count` numbers of 8 bytes each, little-endian, every one below
   * 2^63 (the sign bit clear) and strictly increasing (docs/clients.md, "Binary batches").
   */
  static long[] binaryIds(byte[] body, int count) throws JsonException {
    if (body.length == 0 || body.length % 8 != 0) {
      throw new JsonException("a binary body of " + body.length + " bytes, not 8 to 8 × " + count);
    }
    final int n = body.length / 8;
    if (n > count) throw new JsonException("more than the " + count + " numbers asked for");
    final long[] ids = new long[n];
    final ByteBuffer in = ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN);
    long before = -1;
    for (int i = 0; i < n; i++) {
      final long id = in.getLong();
      if (id < 0) throw new JsonException("a number at or above 2^63");
      if (id <= before) throw new JsonException("numbers not strictly increasing");
      ids[i] = before = id;
    }
    return ids;
  }

  /** The most UTF-8 bytes one business ID may take. */
  static final int MAX_BUSINESS_ID_BYTES = 256;

  /**
   * {"tag":"…","ids":["…",…]} for `tag`, with exactly `count` business IDs: each a JSON string of 1
   * to MAX_BUSINESS_ID_BYTES bytes of UTF-8 without a control character (C0, DEL or C1), no two
   * alike. "tag" must be `tag` itself; "tag" or "ids" twice is refused; other members are skipped
   * (a later node may add some; their grammar is still checked).
   */
  static List<String> businessIds(byte[] body, String tag, int count) throws JsonException {
    final JsonReader reader = new JsonReader(body);
    String answeredTag = null;
    List<String> ids = null;
    reader.beginObject();
    while (reader.hasNext()) {
      final String name = reader.nextName();
      if (name.equals("tag")) {
        if (answeredTag != null) throw new JsonException("\"tag\" twice");
        answeredTag = reader.nextString();
      } else if (name.equals("ids")) {
        if (ids != null) throw new JsonException("\"ids\" twice");
        ids = businessIdArray(reader, count);
      } else {
        // Exactly two members, as every client takes a business batch (clients.md).
        throw new JsonException("member \"" + printable(name) + "\" in a business batch");
      }
    }
    reader.endObject();
    reader.endDocument();
    if (answeredTag == null || ids == null) {
      throw new JsonException("expected {\"tag\":…,\"ids\":[…]}");
    }
    if (!answeredTag.equals(tag)) {
      throw new JsonException(
          "IDs of tag '" + printable(answeredTag) + "' where '" + tag + "' was asked");
    }
    if (ids.size() != count) {
      throw new JsonException(ids.size() + " IDs where " + count + " were asked for");
    }
    return ids;
  }

  // The array of a business batch: at most `count` IDs, each valid, none twice.
  private static List<String> businessIdArray(JsonReader reader, int count) throws JsonException {
    final List<String> ids = new ArrayList<>(Math.min(count, 1024));
    final Set<String> seen = new HashSet<>();
    reader.beginArray();
    while (reader.hasNext()) {
      if (ids.size() == count) throw new JsonException("more than the " + count + " IDs asked for");
      final String id = reader.nextString();
      final int bytes = id.getBytes(StandardCharsets.UTF_8).length;
      if (bytes == 0 || bytes > MAX_BUSINESS_ID_BYTES) {
        throw new JsonException(
            "a business ID of " + bytes + " bytes, not 1 to " + MAX_BUSINESS_ID_BYTES);
      }
      if (id.codePoints().anyMatch(c -> Character.getType(c) == Character.CONTROL)) {
        throw new JsonException("a control character in business ID '" + printable(id) + "'");
      }
      if (!seen.add(id)) {
        throw new JsonException("business ID '" + printable(id) + "' twice in the batch");
      }
      ids.add(id);
    }
    reader.endArray();
    return ids;
  }

  // `text` cut to 64 characters, its control characters as \\uXXXX: safe to put in a message.
  private static String printable(String text) {
    final StringBuilder out = new StringBuilder();
    text.codePoints().limit(64).forEach(c -> {
      if (Character.getType(c) == Character.CONTROL) {
        out.append(String.format("\\u%04x", c));
      } else {
        out.appendCodePoint(c);
      }
    });
    return text.codePointCount(0, text.length()) > 64 ? out + "…" : out.toString();
  }

  /** The message of {"error":"…"}; the body itself (cut to 200 characters) if it is not that. */
  static String errorMessage(byte[] body) {
    try {
      final JsonReader reader = new JsonReader(body);
      reader.beginObject();
      if (reader.hasNext() && reader.nextName().equals("error")) {
        final String message = reader.nextString();
        if (!reader.hasNext()) {
          reader.endObject();
          reader.endDocument();
          return message;
        }
      }
    } catch (JsonException e) {
      // Not snowidd's error shape (a proxy's page, say): the raw text says more.
    }
    final String text = new String(body, StandardCharsets.UTF_8).strip();
    return text.length() > 200 ? text.substring(0, 200) + "…" : text;
  }

  /** /v1/info: the layout is required, every other member is skipped (its grammar checked). */
  static NodeInfo info(byte[] body) throws JsonException {
    final JsonReader reader = new JsonReader(body);
    Layout layout = null;
    long maxBatch = 0;
    final Set<String> seen = new HashSet<>();
    reader.beginObject();
    while (reader.hasNext()) {
      final String name = reader.nextName();
      if (!seen.add(name)) throw new JsonException("\"" + name + "\" twice");
      switch (name) {
        case "layout" -> layout = layout(reader);
        case "max_batch" -> maxBatch = reader.nextLong();
        default -> reader.skipValue();
      }
    }
    reader.endObject();
    reader.endDocument();
    if (layout == null) throw new JsonException("no \"layout\" in /v1/info");
    if (maxBatch < 0) throw new JsonException("a negative max_batch");
    return new NodeInfo(layout, maxBatch);
  }

  private static Layout layout(JsonReader reader) throws JsonException {
    final long[] fields = new long[LAYOUT_FIELDS.length];
    boolean[] found = new boolean[LAYOUT_FIELDS.length];
    String position = null;
    reader.beginObject();
    while (reader.hasNext()) {
      final String name = reader.nextName();
      final int index = indexOf(name);
      if (index >= 0) {
        if (found[index]) throw new JsonException("\"" + name + "\" twice in the layout");
        found[index] = true;
        fields[index] = reader.nextLong();
      } else if (name.equals("sequence_position")) {
        if (position != null) throw new JsonException("\"sequence_position\" twice in the layout");
        position = reader.nextString();
      } else {
        reader.skipValue();
      }
    }
    reader.endObject();
    for (int i = 0; i < LAYOUT_FIELDS.length; i++) {
      if (!found[i]) throw new JsonException("no \"" + LAYOUT_FIELDS[i] + "\" in the layout");
    }
    if (position == null) throw new JsonException("no \"sequence_position\" in the layout");
    return Layout.of(fields[0], fields[1], fields[2], fields[3], fields[4], fields[5], position);
  }

  // The order Layout.of() takes them in.
  private static final String[] LAYOUT_FIELDS = {
    "timestamp_bits", "datacenter_bits", "worker_bits", "sequence_bits", "time_unit_ms", "epoch_ms"
  };

  private static int indexOf(String name) {
    for (int i = 0; i < LAYOUT_FIELDS.length; i++) {
      if (LAYOUT_FIELDS[i].equals(name)) return i;
    }
    return -1;
  }
}
