// Segment mode's memory of the ranges a node was handed, kept in its state
// directory, so that a store put back from an older backup is noticed.
//
// For each store (named by segment_store_name) and tag, the file holds the
// highest range end the store ever handed this node. A store's max_id only
// grows (segment_store.h), so a range that starts below that end can only
// come from a store that went back: restored from a backup, or max_id
// lowered by hand. Its numbers may have been handed out already, by this
// node or by others, and SegmentAllocator refuses it (see segment.cc).
//
// The file is written the way the state file is (durable_file.h: a
// temporary file, fsync, rename, fsync of the directory, a checksum line),
// before any number of the range it records is handed out; so after a crash
// it covers every number this node issued. It has one form; anything else is
// damage, and a damaged file stops the start rather than being forgotten.
//
// What it cannot see: a restore of the state directory together with the
// store (the default SQLite store lives inside it), and numbers other nodes
// were handed above this node's last range (each node remembers its own).
//
// Thread-safety: every method may be called from any thread; writes are
// serialised. One process per state directory (snowidd holds it locked,
// leased or not).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "snowid/error.h"

namespace snowid::segment {

class RangeMemory {
 public:
  // Reads the memory at `path`; nothing there is an empty memory. kStateFile
  // naming the file and what to do if it is damaged or cannot be read.
  static Result<std::unique_ptr<RangeMemory>> open(const std::filesystem::path& path);
  ~RangeMemory();
  RangeMemory(const RangeMemory&) = delete;
  RangeMemory& operator=(const RangeMemory&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // The highest range end `store` handed this node for `tag`; nullopt if none.
  std::optional<std::int64_t> end_of(std::string_view store, std::string_view tag) const;

  // Raises the remembered end of (store, tag) to `end`, durably, before it
  // returns; nothing to do if it is not above. On failure the memory is as
  // before and the range must not be used.
  Status remember(std::string_view store, std::string_view tag, std::int64_t end);

 private:
  using Key = std::pair<std::string, std::string>;  // store, tag
  RangeMemory(std::filesystem::path path, int directory_fd, std::map<Key, std::int64_t> ends);

  const std::filesystem::path path_;
  const int directory_fd_;
  mutable std::mutex mutex_;
  std::map<Key, std::int64_t> ends_;
};

// The name a store's memory is kept under: its URL without user, password
// or query parameters other than host, hostaddr, port, dbname and layout
// (which name the database and table), and for SQLite the absolute path of its
// file. Two URLs of one database may get two names (then a restore is seen
// under one only); never does one name stand for two databases.
std::string segment_store_name(std::string_view url);

}  // namespace snowid::segment
