/*
 * SnowidClientOptions: what a SnowidClient talks to and how it buffers, with the C++ client's
 * names (ClientOptions, include/snowid/client.h) and defaults, but for snowidd's HTTP listener.
 * Built by SnowidClientOptions.builder()...build(), which checks every option and names the first
 * bad one (SnowidException, code INVALID_ARGUMENT). Immutable: safe to share between threads.
 */
package io.snowid.client;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLContext;

/** The options of a SnowidClient; build them with {@link #builder()}. */
public final class SnowidClientOptions {
  /** The largest max_batch accepted (snowidd's own --max-batch limit). */
  public static final int MAX_BATCH_LIMIT = 1_000_000;

  private final List<URI> endpoints;
  private final String bearerToken;
  private final String agent;
  private final Duration callDeadline;
  private final Duration emptyWait;
  private final Duration startWait;
  private final double lowWater;
  private final int initialBatch;
  private final int maxBatch;
  private final Duration refillPeriod;
  private final Duration maxAge;
  private final Duration backoffInitial;
  private final Duration backoffMax;
  private final boolean binary;
  private final SSLContext sslContext; // null: the JVM's default

  private SnowidClientOptions(Builder b, List<URI> endpoints) {
    this.endpoints = List.copyOf(endpoints);
    this.bearerToken = b.bearerToken;
    this.agent = b.agent;
    this.callDeadline = b.callDeadline;
    this.emptyWait = b.emptyWait;
    this.startWait = b.startWait;
    this.lowWater = b.lowWater;
    this.initialBatch = b.initialBatch;
    this.maxBatch = b.maxBatch;
    this.refillPeriod = b.refillPeriod;
    this.maxAge = b.maxAge;
    this.backoffInitial = b.backoffInitial;
    this.backoffMax = b.backoffMax;
    this.binary = b.binary;
    this.sslContext = b.sslContext;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** snowidd HTTP base URLs ("http://10.0.0.1:8080"); each refill draws one of the healthy ones. */
  public List<URI> endpoints() {
    return endpoints;
  }

  public String bearerToken() {
    return bearerToken;
  }

  public String agent() {
    return agent;
  }

  public Duration callDeadline() {
    return callDeadline;
  }

  public Duration emptyWait() {
    return emptyWait;
  }

  public Duration startWait() {
    return startWait;
  }

  public double lowWater() {
    return lowWater;
  }

  public int initialBatch() {
    return initialBatch;
  }

  public int maxBatch() {
    return maxBatch;
  }

  public Duration refillPeriod() {
    return refillPeriod;
  }

  public Duration maxAge() {
    return maxAge;
  }

  public Duration backoffInitial() {
    return backoffInitial;
  }

  public Duration backoffMax() {
    return backoffMax;
  }

  /** The TLS context of https:// endpoints; null: the JVM's default (SSLContext.getDefault()). */
  public SSLContext sslContext() {
    return sslContext;
  }

  // Whether batches are asked for in binary (format=binary) first; false only in tests, which hold
  // the JSON path to the same rules.
  boolean binary() {
    return binary;
  }

  /** Collects options; build() checks them. Not thread-safe. */
  public static final class Builder {
    private final List<String> endpoints = new ArrayList<>();
    private String bearerToken = "";
    private String agent = "";
    private Duration callDeadline = Duration.ofMillis(500);
    private Duration emptyWait = Duration.ofMillis(200);
    private Duration startWait = Duration.ofSeconds(2);
    private double lowWater = 0.5;
    private int initialBatch = 1000;
    private int maxBatch = 10_000;
    private Duration refillPeriod = Duration.ofMillis(500);
    private Duration maxAge = Duration.ofSeconds(10);
    private Duration backoffInitial = Duration.ofMillis(100);
    private Duration backoffMax = Duration.ofSeconds(5);
    private boolean binary = true;
    private SSLContext sslContext;

    private Builder() {}

    /**
     * Adds snowidd HTTP base URLs, http://HOST[:PORT] or https://HOST[:PORT]; at least one. Each
     * refill goes to one drawn at random among those not backing off.
     */
    public Builder endpoints(String... urls) {
      endpoints.addAll(List.of(urls));
      return this;
    }

    /** Sent as "Authorization: Bearer TOKEN" when not empty. Default: empty. */
    public Builder bearerToken(String token) {
      bearerToken = token;
      return this;
    }

    /** The client's name in the nodes' metrics, [a-zA-Z][a-zA-Z0-9-]*, at most 64 characters. */
    public Builder agent(String name) {
      agent = name;
      return this;
    }

    /** Deadline of every HTTP call to a node. Default 500 ms. */
    public Builder callDeadline(Duration d) {
      callDeadline = d;
      return this;
    }

    /** Longest wait of next() on an empty buffer before UNAVAILABLE. Default 200 ms. */
    public Builder emptyWait(Duration d) {
      emptyWait = d;
      return this;
    }

    /**
     * Longest wait of next() on an empty buffer until the client's first batch has arrived (its
     * first refill also opens its first connection, and a cold JVM loads the HTTP classes), in
     * place of emptyWait. Default 2 s; zero means emptyWait from the start.
     */
    public Builder startWait(Duration d) {
      startWait = d;
      return this;
    }

    /** A refill starts when fewer than this fraction of a batch is left, (0, 1]. Default 0.5. */
    public Builder lowWater(double fraction) {
      lowWater = fraction;
      return this;
    }

    /** IDs in the first refill, and the least a refill asks for. Default 1000. */
    public Builder initialBatch(int n) {
      initialBatch = n;
      return this;
    }

    /** The most one refill asks for (also bounded by the node's own max_batch). Default 10000. */
    public Builder maxBatch(int n) {
      maxBatch = n;
      return this;
    }

    /** The batch doubles while refills come sooner than half this, halves beyond twice it. */
    public Builder refillPeriod(Duration d) {
      refillPeriod = d;
      return this;
    }

    /** A buffered ID this old (since its fetch began) is dropped, not handed out. Default 10 s. */
    public Builder maxAge(Duration d) {
      maxAge = d;
      return this;
    }

    /**
     * A failed endpoint is skipped up to this long, doubling per failure; each skip is drawn
     * between half and all of it. Default 100 ms.
     */
    public Builder backoffInitial(Duration d) {
      backoffInitial = d;
      return this;
    }

    /** The longest skip of a failed endpoint. Default 5 s. */
    public Builder backoffMax(Duration d) {
      backoffMax = d;
      return this;
    }

    /**
     * The TLS context for https:// endpoints: its trust managers decide which node certificates
     * are trusted (its key managers, a client certificate if the nodes ask for one); the
     * certificate must also name the endpoint's host. Default: the JVM's default context (its
     * trust store, javax.net.ssl.trustStore).
     */
    public Builder sslContext(SSLContext context) {
      sslContext = context;
      return this;
    }

    // Tests only: ask for JSON batches from the start, as from a node that refused binary.
    Builder jsonOnly() {
      binary = false;
      return this;
    }

    /** The options; INVALID_ARGUMENT naming the first bad one. */
    public SnowidClientOptions build() throws SnowidException {
      if (endpoints.isEmpty()) throw invalid("endpoints: at least one is needed");
      final List<URI> uris = new ArrayList<>();
      for (String endpoint : endpoints) uris.add(endpoint(endpoint));
      if (bearerToken == null || bearerToken.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
        throw invalid("bearerToken: must be set (empty for none) and hold no control character");
      }
      if (agent == null || !(agent.isEmpty() || Names.valid(agent, "-"))) {
        throw invalid("agent: '" + agent + "' is not [a-zA-Z][a-zA-Z0-9-]* of at most 64 characters");
      }
      positive("callDeadline", callDeadline, Duration.ofMillis(1));
      positive("emptyWait", emptyWait, Duration.ZERO);
      positive("startWait", startWait, Duration.ZERO);
      if (!(lowWater > 0.0 && lowWater <= 1.0)) throw invalid("lowWater: " + lowWater + " is not in (0, 1]");
      if (initialBatch < 1) throw invalid("initialBatch: must be at least 1");
      if (maxBatch < initialBatch || maxBatch > MAX_BATCH_LIMIT) {
        throw invalid(
            "maxBatch: " + maxBatch + " is not in [initialBatch (" + initialBatch + "), "
                + MAX_BATCH_LIMIT + "]");
      }
      positive("refillPeriod", refillPeriod, Duration.ofMillis(1));
      positive("maxAge", maxAge, Duration.ofMillis(10));
      positive("backoffInitial", backoffInitial, Duration.ofMillis(1));
      if (backoffMax == null || backoffMax.compareTo(backoffInitial) < 0) {
        throw invalid("backoffMax: must be at least backoffInitial");
      }
      return new SnowidClientOptions(this, uris);
    }

    private static URI endpoint(String text) throws SnowidException {
      final String problem = "endpoints: '" + text + "' is not http://HOST[:PORT] or https://HOST[:PORT]";
      if (text == null) throw invalid(problem);
      try {
        final URI uri = new URI(text.endsWith("/") ? text.substring(0, text.length() - 1) : text);
        final String scheme = uri.getScheme();
        final boolean pathless = uri.getRawPath() == null || uri.getRawPath().isEmpty();
        if (scheme == null
            || !(scheme.equals("http") || scheme.equals("https"))
            || uri.getHost() == null
            || uri.getPort() == 0
            || uri.getPort() > 65535
            || uri.getRawUserInfo() != null
            || !pathless
            || uri.getRawQuery() != null
            || uri.getRawFragment() != null) {
          throw invalid(problem);
        }
        return uri;
      } catch (URISyntaxException e) {
        throw invalid(problem);
      }
    }

    private static void positive(String name, Duration value, Duration least)
        throws SnowidException {
      if (value == null || value.compareTo(least) < 0) {
        throw invalid(name + ": must be at least " + least.toMillis() + " ms");
      }
    }

    private static SnowidException invalid(String message) {
      return new SnowidException(SnowidException.Code.INVALID_ARGUMENT, message);
    }
  }
}
