/*
 * Decoded: the fields of a Snowflake ID under the layout of the node that issued it
 * (SnowidClient.decode), as GET /v1/decode/{id} reports them. Immutable.
 */
package io.snowid.client;

import java.time.Instant;

/**
 * The fields of a Snowflake ID.
 *
 * @param id the ID
 * @param timestampMs when it was issued, in Unix milliseconds (the layout's epoch plus its time
 *     field times the layout's unit)
 * @param time the same moment as an Instant
 * @param datacenter the datacenter id of the node that issued it
 * @param worker the worker id of that node within its datacenter
 * @param sequence its place among the IDs of its time unit
 */
public record Decoded(
    long id, long timestampMs, Instant time, long datacenter, long worker, long sequence) {}
