/*
 * SnowidException: why a SnowidClient call or its options failed, as a code a program branches on
 * and a message a person acts on (which option, which endpoint, what the node answered).
 * Immutable: safe to pass between threads.
 */
package io.snowid.client;

/** A failure of the client or of the nodes it asks, with a code to branch on. */
public final class SnowidException extends Exception {
  private static final long serialVersionUID = 1L;

  /** What went wrong, in the C++ client's terms. */
  public enum Code {
    /**
     * A bad option or argument, or the nodes refuse this client's request (HTTP 400, 403 and other
     * 4xx but 401 and 404).
     */
    INVALID_ARGUMENT,
    /** The nodes refuse the bearer token (HTTP 401). */
    UNAUTHENTICATED,
    /** The nodes do not know the segment tag, or serve no segments (HTTP 404). */
    NOT_FOUND,
    /**
     * No ID was buffered and none could be fetched within empty_wait: every endpoint is down, slow
     * or unable to issue (connection errors, deadlines, 5xx).
     */
    UNAVAILABLE,
    /** The client is closed. */
    CLOSED,
  }

  private final Code code;

  public SnowidException(Code code, String message) {
    super(message);
    this.code = code;
  }

  public Code code() {
    return code;
  }

  @Override
  public String toString() {
    return "SnowidException(" + code + "): " + getMessage();
  }
}
