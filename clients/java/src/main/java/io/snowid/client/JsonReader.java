/*
 * JsonReader: a small, strict pull reader of RFC 8259 JSON, for the few reply shapes of snowidd
 * the client reads (Replies). The JDK has no JSON library and the client depends on the JDK only.
 *
 * Strict: anything outside the grammar is refused with a JsonException naming the offset (a
 * trailing comma, a leading zero, a control character in a string, a lone surrogate escape,
 * malformed UTF-8, bytes after the document, nesting deeper than 64). A caller reads the shape it
 * expects (beginObject, nextName, nextLong, ...) and skipValue()s what it does not need, which
 * still checks that part's grammar. nextId() reads a string of decimal digits straight into a long
 * (the IDs of a batch) without building a String.
 *
 * Not thread-safe: one reader per reply, on one thread.
 */
package io.snowid.client;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

final class JsonReader {
  /** The reply is not the JSON, or not the shape, the reader was asked for. */
  static final class JsonException extends Exception {
    private static final long serialVersionUID = 1L;

    JsonException(String message) {
      super(message);
    }
  }

  private static final int MAX_DEPTH = 64;

  private final byte[] in;
  private int pos;
  private int depth;
  // Per open container: whether no element has been read yet (so no comma is due).
  private final boolean[] first = new boolean[MAX_DEPTH];
  private final boolean[] isObject = new boolean[MAX_DEPTH];

  JsonReader(byte[] in) {
    this.in = in;
  }

  void beginObject() throws JsonException {
    open('{', true);
  }

  void endObject() throws JsonException {
    close('}', true);
  }

  void beginArray() throws JsonException {
    open('[', false);
  }

  void endArray() throws JsonException {
    close(']', false);
  }

  /**
   * Whether the open container has another element; consumes the comma before it. False at its
   * closing bracket, which endObject()/endArray() then consume.
   */
  boolean hasNext() throws JsonException {
    if (depth == 0) throw error("hasNext() outside an object or array");
    final byte close = (byte) (isObject[depth - 1] ? '}' : ']');
    final int c = peekNonSpace();
    if (first[depth - 1]) {
      if (c == close) return false;
      first[depth - 1] = false;
      return true;
    }
    if (c == close) return false;
    if (c != ',') throw error("expected ',' or '" + (char) close + "'");
    pos++;
    return true;
  }

  /** The next member's name, and its ':'. */
  String nextName() throws JsonException {
    if (depth == 0 || !isObject[depth - 1]) throw error("a name outside an object");
    final String name = nextString();
    if (peekNonSpace() != ':') throw error("expected ':'");
    pos++;
    return name;
  }

  String nextString() throws JsonException {
    expect('"');
    final StringBuilder out = new StringBuilder();
    int run = pos; // start of the bytes not yet decoded
    for (; ; ) {
      if (pos >= in.length) throw error("unterminated string");
      final int b = in[pos] & 0xff;
      if (b == '"' || b == '\\') {
        appendUtf8(out, run, pos);
        pos++;
        if (b == '"') return out.toString();
        readEscape(out);
        run = pos;
      } else if (b < 0x20) {
        throw error("a control character in a string");
      } else {
        pos++;
      }
    }
  }

  /**
   * A JSON string of ASCII digits 0-9 and nothing else (no sign, space, escape, underscore, leading
   * zero but "0" itself, or other script's digits) whose value is below 2^63.
   */
  long nextId() throws JsonException {
    expect('"');
    final int start = pos;
    final long value = digits("an ID");
    if (pos >= in.length || in[pos] != '"') throw errorAt(start, "an ID is not a string of digits");
    pos++;
    return value;
  }

  /** A JSON number that is an integer (no fraction, no exponent) and fits a long. */
  long nextLong() throws JsonException {
    peekNonSpace();
    final boolean negative = pos < in.length && in[pos] == '-';
    if (negative) pos++;
    final long value = digits("an integer");
    if (pos < in.length && (in[pos] == '.' || in[pos] == 'e' || in[pos] == 'E')) {
      throw error("expected an integer");
    }
    return negative ? -value : value;
  }

  boolean nextBoolean() throws JsonException {
    peekNonSpace();
    if (literal("true")) return true;
    if (literal("false")) return false;
    throw error("expected true or false");
  }

  /** Whether the next value is null; consumes it if so. */
  boolean nextIsNull() throws JsonException {
    peekNonSpace();
    return literal("null");
  }

  /** Reads and drops one value of any kind, checking its grammar. */
  void skipValue() throws JsonException {
    final int c = peekNonSpace();
    switch (c) {
      case '{' -> {
        beginObject();
        while (hasNext()) {
          nextName();
          skipValue();
        }
        endObject();
      }
      case '[' -> {
        beginArray();
        while (hasNext()) skipValue();
        endArray();
      }
      case '"' -> nextString();
      case 't', 'f' -> nextBoolean();
      case 'n' -> {
        if (!nextIsNull()) throw error("expected null");
      }
      default -> skipNumber();
    }
  }

  /** Requires that nothing but white space follows the document. */
  void endDocument() throws JsonException {
    if (depth != 0) throw error("the document ends inside an object or array");
    if (peekNonSpace() != -1) throw error("bytes after the document");
  }

  // --------------------------------------------------------------------------------------------

  private void open(char bracket, boolean object) throws JsonException {
    if (depth == MAX_DEPTH) throw error("nested deeper than " + MAX_DEPTH);
    expect(bracket);
    first[depth] = true;
    isObject[depth] = object;
    depth++;
  }

  private void close(char bracket, boolean object) throws JsonException {
    if (depth == 0 || isObject[depth - 1] != object) throw error("no open " + bracket);
    expect(bracket);
    depth--;
  }

  private void expect(char c) throws JsonException {
    if (peekNonSpace() != c) throw error("expected '" + c + "'");
    pos++;
  }

  /** Skips white space; the next byte, or -1 at the end. */
  private int peekNonSpace() {
    while (pos < in.length) {
      final byte b = in[pos];
      if (b != ' ' && b != '\t' && b != '\n' && b != '\r') return b & 0xff;
      pos++;
    }
    return -1;
  }

  private boolean literal(String word) {
    if (pos + word.length() > in.length) return false;
    for (int i = 0; i < word.length(); i++) {
      if (in[pos + i] != word.charAt(i)) return false;
    }
    pos += word.length();
    return true;
  }

  /** 0 or [1-9][0-9]* that fits a long (non-negative). */
  private long digits(String what) throws JsonException {
    final int start = pos;
    long value = 0;
    while (pos < in.length && in[pos] >= '0' && in[pos] <= '9') {
      final int digit = in[pos] - '0';
      if (value > (Long.MAX_VALUE - digit) / 10) throw errorAt(start, what + " above 2^63-1");
      value = value * 10 + digit;
      pos++;
    }
    if (pos == start) throw errorAt(start, "expected " + what);
    if (in[start] == '0' && pos - start > 1) throw errorAt(start, what + " with a leading zero");
    return value;
  }

  private void skipNumber() throws JsonException {
    if (pos < in.length && in[pos] == '-') pos++;
    if (pos >= in.length || in[pos] < '0' || in[pos] > '9') throw error("expected a value");
    if (in[pos] == '0') {
      pos++;
    } else {
      skipDigits();
    }
    if (pos < in.length && in[pos] == '.') {
      pos++;
      if (skipDigits() == 0) throw error("expected a digit after '.'");
    }
    if (pos < in.length && (in[pos] == 'e' || in[pos] == 'E')) {
      pos++;
      if (pos < in.length && (in[pos] == '+' || in[pos] == '-')) pos++;
      if (skipDigits() == 0) throw error("expected a digit in the exponent");
    }
  }

  private int skipDigits() {
    final int start = pos;
    while (pos < in.length && in[pos] >= '0' && in[pos] <= '9') pos++;
    return pos - start;
  }

  private void readEscape(StringBuilder out) throws JsonException {
    if (pos >= in.length) throw error("unterminated escape");
    final byte e = in[pos++];
    switch (e) {
      case '"' -> out.append('"');
      case '\\' -> out.append('\\');
      case '/' -> out.append('/');
      case 'b' -> out.append('\b');
      case 'f' -> out.append('\f');
      case 'n' -> out.append('\n');
      case 'r' -> out.append('\r');
      case 't' -> out.append('\t');
      case 'u' -> readUnicodeEscape(out);
      default -> throw errorAt(pos - 1, "an unknown escape");
    }
  }

  private void readUnicodeEscape(StringBuilder out) throws JsonException {
    final char c = hex4();
    if (Character.isHighSurrogate(c)) {
      if (!literal("\\u")) throw error("a high surrogate without its low one");
      final char low = hex4();
      if (!Character.isLowSurrogate(low)) throw error("a high surrogate without its low one");
      out.append(c).append(low);
    } else if (Character.isLowSurrogate(c)) {
      throw error("a low surrogate without its high one");
    } else {
      out.append(c);
    }
  }

  private char hex4() throws JsonException {
    if (pos + 4 > in.length) throw error("a short \\u escape");
    int value = 0;
    for (int i = 0; i < 4; i++) {
      final int digit = Character.digit(in[pos++], 16);
      if (digit < 0) throw error("a bad hex digit in a \\u escape");
      value = value * 16 + digit;
    }
    return (char) value;
  }

  private void appendUtf8(StringBuilder out, int from, int to) throws JsonException {
    if (from == to) return;
    try {
      final CharBuffer chars =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(in, from, to - from));
      out.append(chars);
    } catch (CharacterCodingException e) {
      throw errorAt(from, "malformed UTF-8 in a string");
    }
  }

  private JsonException error(String message) {
    return errorAt(pos, message);
  }

  private JsonException errorAt(int offset, String message) {
    return new JsonException(message + " at byte " + offset);
  }
}
