/*
 * SnowidException: why a SnowidClient call or its options failed, as a code a program branches on
 * and a message a person acts on (which option, which endpoint, what the node answered).
 *
 * Unchecked (a RuntimeException), as the ID generators a client replaces throw (Hutool's
 * Snowflake, CosId, uid-generator): `long id = client.next();` needs no try. A caller that wants
 * to handle UNAVAILABLE catches SnowidException and branches on code(). Immutable: safe to pass
 * between threads.
 */
package io.snowid.client;

/** A failure of the client or of the nodes it asks, with a code to branch on. */
public final class SnowidException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** What went wrong, in the C++ client's terms. */
  public enum Code {
    /**
     * A bad option or argument, or the nodes refuse this client's request (HTTP 400 and other 4xx
     * but 401, 403, 404, 408, 409 and 429).
     */
    INVALID_ARGUMENT,
    /** The nodes refuse the bearer token: none where one is needed (401) or a wrong one (403). */
    UNAUTHENTICATED,
    /** The nodes do not know the segment tag, or serve no segments (HTTP 404). */
    NOT_FOUND,
    /**
     * The segment tag's state refuses the call (HTTP 409): it is retired, or the business IDs of
     * its period have outgrown its template's width. Not retried: every node says the same.
     */
    FAILED_PRECONDITION,
    /**
     * No ID was buffered and none could be fetched within emptyWait (startWait until the first
     * batch came): every endpoint is down, slow, unable to issue (connection errors, deadlines,
     * 5xx) or sending answers the client does not take.
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
