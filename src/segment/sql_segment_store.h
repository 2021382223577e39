// The one SegmentStore written in SQL (segment_store.cc), shared by every
// database: each supplies its connection and its dialect of the statements.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "snowid/ext/segment_store.h"
#include "sql_connection.h"

namespace snowid::segment {

using sql::SqlConnection;
using sql::SqlRows;
using sql::SqlValue;

// `path` is opened (created if missing) in WAL mode with synchronous=FULL and
// a busy timeout of `timeout`; the schema is applied at once
// (sqlite_connection.cc).
Result<std::unique_ptr<SqlConnection>> open_sqlite(const std::string& path,
                                                   std::chrono::milliseconds timeout);

// What each statement receives ($1, $2 ...) and must return. take_range is
// the statement the no-repeat invariant rests on: it raises the tag's max_id
// and returns the new value atomically (see segment_store.cc).
struct SegmentStatements {
  std::string take_range;  // ($1 tag, $2 increment or NULL for the step) -> (new max_id, step), or
                           // no row if nothing was taken (unknown tag, or 2^63-1 would be passed)
  std::string tag_exists;  // ($1 tag) -> (max_id) if the tag exists
  std::string create_tag;  // ($1 tag, $2 max_id, $3 step, $4 description) -> a row if inserted,
                           // none if the tag was present
  std::string set_step;    // ($1 tag, $2 step) -> a row if the tag exists
  std::string list_tags;   // ($1 limit) -> (tag, max_id, step, description, updated_at) by tag,
                           // without the '#ticket' row
  std::string read_identity;   // () -> (increment, remainder) of the '#ticket' row if any
  std::string write_identity;  // ($1 remainder, $2 increment) -> a row if the '#ticket' row was
                               // written (only into a table without rows); "": the store
                               // cannot record one
  // snowid's own rows ('#' keys, SegmentStore::read_own_row): created by
  // create_tag and ranges taken by take_range, whose statements serve any key.
  // "" for read_own_row: the store keeps none (every own-row call refuses).
  std::string read_own_row;     // ($1 key) -> (tag, max_id, step, description, updated_at)
  std::string list_own_rows;    // ($1 prefix, $2 the least string above all with that prefix,
                                // $3 limit) -> rows as read_own_row's, by key byte by byte
  std::string replace_own_row;  // ($1 key, $2 version, $3 description) -> a row if the row's
                                // max_id was $2 (and below 2^63-1), now raised by one
  std::string store_time;       // () -> (the database server's Unix time in milliseconds)
};

std::unique_ptr<SegmentStore> make_sql_segment_store(std::unique_ptr<SqlConnection> connection,
                                                     SegmentStatements statements);

// mysql:// and mariadb:// URLs (mysql_segment_store.cc).
Result<std::unique_ptr<SegmentStore>> open_mysql_segment_store(std::string_view url,
                                                               const SegmentStoreOptions& options);

}  // namespace snowid::segment
