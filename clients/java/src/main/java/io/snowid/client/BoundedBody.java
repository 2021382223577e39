/*
 * BoundedBody: a java.net.http body handler that never holds more than a bound, so that a node (or
 * a proxy) that sends an endless or a 300 MB body costs a few kilobytes, not the heap.
 *
 * A 200 answer's body may take `limit` bytes: one that says it is longer (Content-Length) fails
 * the call before a byte of it is read, and one that turns out longer (chunked, or a length that
 * lies) fails it as soon as the byte past the limit arrives; the rest is never read (the
 * connection is dropped). The body of any other status is an error message the caller only shows:
 * it is cut at ERROR_LIMIT bytes. status() tells the caller whether a status line came before a
 * failure (a deadline that passes mid-body is an answer the client did not take, not silence).
 *
 * Thread-safety: one handler per call; java.net.http runs it on its own threads, status() is read
 * on the caller's.
 */
package io.snowid.client;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

final class BoundedBody implements HttpResponse.BodyHandler<byte[]> {
  /** What is kept of a body whose status is not 200. */
  static final int ERROR_LIMIT = 64 * 1024;

  /** A 200 answer's body is longer than the handler's limit. */
  static final class TooLong extends IOException {
    private static final long serialVersionUID = 1L;

    TooLong(String message) {
      super(message);
    }
  }

  private final int limit;
  private volatile int status; // 0 until the status line came

  /** Requires: limit >= 0. */
  BoundedBody(int limit) {
    this.limit = limit;
  }

  /** The status of the answer, 0 if none came (yet). */
  int status() {
    return status;
  }

  @Override
  public HttpResponse.BodySubscriber<byte[]> apply(HttpResponse.ResponseInfo info) {
    status = info.statusCode();
    if (status != 200) return new Reader(ERROR_LIMIT, true, -1);
    return new Reader(limit, false, info.headers().firstValueAsLong("Content-Length").orElse(-1));
  }

  // Collects up to `limit` bytes; past it, keeps what it has (cut) or fails.
  private static final class Reader implements HttpResponse.BodySubscriber<byte[]> {
    private final CompletableFuture<byte[]> body = new CompletableFuture<>();
    private final int limit;
    private final boolean cut;
    private final long declared; // Content-Length, -1 if none
    private Flow.Subscription subscription;
    private byte[] bytes = new byte[0];
    private int size;

    Reader(int limit, boolean cut, long declared) {
      this.limit = limit;
      this.cut = cut;
      this.declared = declared;
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      this.subscription = subscription;
      if (!cut && declared > limit) {
        subscription.cancel();
        body.completeExceptionally(
            new TooLong("a body of " + declared + " bytes, above the " + limit + " it may take"));
        return;
      }
      subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(List<ByteBuffer> buffers) {
      if (body.isDone()) return;
      for (ByteBuffer buffer : buffers) {
        final int take = Math.min(buffer.remaining(), limit - size);
        if (size + take > bytes.length) {
          bytes = Arrays.copyOf(bytes, Math.min(limit, Math.max(size + take, 2 * bytes.length)));
        }
        buffer.get(bytes, size, take);
        size += take;
        if (buffer.hasRemaining()) {
          subscription.cancel();
          if (cut) {
            body.complete(Arrays.copyOf(bytes, size));
          } else {
            body.completeExceptionally(
                new TooLong("a body longer than the " + limit + " bytes it may take"));
          }
          return;
        }
      }
    }

    @Override
    public void onError(Throwable error) {
      body.completeExceptionally(error);
    }

    @Override
    public void onComplete() {
      body.complete(Arrays.copyOf(bytes, size));
    }

    @Override
    public CompletionStage<byte[]> getBody() {
      return body;
    }
  }
}
