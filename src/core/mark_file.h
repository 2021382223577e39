// A durable Unix-ms mark kept for a purpose of the caller's own, written
// exactly as a generator's state file is (src/core/state_file.h): replaced
// atomically (temporary file, fsync, rename, fsync of the directory), with a
// checksum, and locked ("<file>.lock", flock) for the object's lifetime, so
// that no second process uses it meanwhile. snowidd keeps its cluster-mode
// high-water marks and the store incarnation it served in such files
// (src/server/cluster_marks.h).
//
// Thread-safety: none; one owner calls it.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "snowid/error.h"

namespace snowid {

class MarkFile {
 public:
  // Locks and reads `path`; nothing there: no mark yet. `description` is
  // stored with the mark, and a file written with another one is refused
  // (kStateFile). The directory is locked shared: several mark files and
  // generators may share it, but not with a generator that locks it for
  // itself. kStateLocked while another process holds the file.
  static Result<std::unique_ptr<MarkFile>> open(const std::filesystem::path& path,
                                                const std::string& description);
  ~MarkFile();
  MarkFile(const MarkFile&) = delete;
  MarkFile& operator=(const MarkFile&) = delete;

  // The mark as last read or stored; nullopt before the first store().
  std::optional<std::chrono::milliseconds> mark() const;
  const std::filesystem::path& path() const;
  // Replaces the mark durably; on failure the old one stays in force.
  Status store(std::chrono::milliseconds mark);

 private:
  struct Impl;
  explicit MarkFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace snowid
