/*
 * Layout: where a node puts each field of a Snowflake ID, as its /v1/info reports it, and the
 * decoding of an ID under it (the same arithmetic as snowidd's src/core/bit_fields.h: with the
 * sequence "low" the fields are, from the top, timestamp, datacenter, worker, sequence; with it
 * "high", timestamp, sequence, datacenter, worker).
 *
 * Invariant (checked by of()): every width is in range, at most 63 bits in all, unit >= 1 ms,
 * epoch >= 0. Immutable: safe from any thread.
 */
package io.snowid.client;

import io.snowid.client.JsonReader.JsonException;
import java.time.Instant;

record Layout(
    int timestampBits,
    int datacenterBits,
    int workerBits,
    int sequenceBits,
    long timeUnitMs,
    long epochMs,
    boolean sequenceHigh) {

  static Layout of(
      long timestampBits,
      long datacenterBits,
      long workerBits,
      long sequenceBits,
      long timeUnitMs,
      long epochMs,
      String sequencePosition)
      throws JsonException {
    final long total = timestampBits + datacenterBits + workerBits + sequenceBits;
    if (timestampBits < 1 || sequenceBits < 1 || datacenterBits < 0 || workerBits < 0) {
      throw new JsonException("a layout field width out of range");
    }
    if (total > 63) throw new JsonException("a layout of " + total + " bits (at most 63)");
    if (timeUnitMs < 1 || epochMs < 0) throw new JsonException("a layout unit or epoch out of range");
    if (!sequencePosition.equals("low") && !sequencePosition.equals("high")) {
      throw new JsonException("sequence_position \"" + sequencePosition + "\" (low or high)");
    }
    return new Layout(
        (int) timestampBits,
        (int) datacenterBits,
        (int) workerBits,
        (int) sequenceBits,
        timeUnitMs,
        epochMs,
        sequencePosition.equals("high"));
  }

  int totalBits() {
    return timestampBits + datacenterBits + workerBits + sequenceBits;
  }

  /** The fields of `id`; INVALID_ARGUMENT if it is negative or has bits above the layout's. */
  Decoded decode(long id) throws SnowidException {
    if (id < 0 || (id >>> totalBits()) != 0) {
      throw new SnowidException(
          SnowidException.Code.INVALID_ARGUMENT,
          "ID " + id + " is not an ID of a " + totalBits() + "-bit layout");
    }
    final int workerShift = sequenceHigh ? 0 : sequenceBits;
    final int datacenterShift = workerShift + workerBits;
    final int sequenceShift = sequenceHigh ? datacenterShift + datacenterBits : 0;
    final int timestampShift = totalBits() - timestampBits;
    final long units = (id >>> timestampShift) & mask(timestampBits);
    final long timestampMs = epochMs + units * timeUnitMs;
    return new Decoded(
        id,
        timestampMs,
        Instant.ofEpochMilli(timestampMs),
        (id >>> datacenterShift) & mask(datacenterBits),
        (id >>> workerShift) & mask(workerBits),
        (id >>> sequenceShift) & mask(sequenceBits));
  }

  private static long mask(int bits) {
    return (1L << bits) - 1;
  }
}
