/*
 * Names: the client's checks of agent names (snowidd's rule, [a-zA-Z][a-zA-Z0-9-]*, at most 64
 * characters) and of segment tags (only what cannot travel: the nodes judge the rest), so that a
 * bad one is the caller's error at once rather than a refusal from every node. Stateless.
 */
package io.snowid.client;

final class Names {
  private Names() {}

  static final int MAX_LENGTH = 64;
  static final int MAX_TAG_LENGTH = 128; // Leaf's biz_tag is a VARCHAR(128)

  /** A letter, then letters, digits or characters of `more`; 1 to 64 characters. */
  static boolean valid(String name, String more) {
    if (name.isEmpty() || name.length() > MAX_LENGTH || !letter(name.charAt(0))) return false;
    for (int i = 1; i < name.length(); i++) {
      final char c = name.charAt(i);
      if (!letter(c) && !(c >= '0' && c <= '9') && more.indexOf(c) < 0) return false;
    }
    return true;
  }

  /**
   * INVALID_ARGUMENT unless `tag` is 1 to 128 characters without a control character: the nodes
   * judge the rest (the tag travels percent-encoded), so that every tag a node serves is reachable.
   */
  static void checkTag(String tag) throws SnowidException {
    if (tag == null || tag.isEmpty() || tag.length() > MAX_TAG_LENGTH
        || tag.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw new SnowidException(
          SnowidException.Code.INVALID_ARGUMENT,
          "'" + tag + "' is not a segment tag (1 to " + MAX_TAG_LENGTH
              + " characters, no control character)");
    }
  }

  private static boolean letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
}
