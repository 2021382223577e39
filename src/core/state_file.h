// The persisted high-water mark of one generator.
//
// The file holds a Unix-ms timestamp H with the promise that no ID with a
// timestamp above H was issued before the file was last written. It is
// replaced atomically (write a temporary file, fsync it, rename it over the
// old one, fsync the directory), so a crash leaves either the old or the new
// mark, never a torn one. A checksum line catches damage; damage is an error,
// never a silent reset. "<file>.lock" is held with flock() for the lifetime of
// the object, so two processes cannot use one state file at once.
//
// Not thread-safe: the generator serialises calls.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "snowid/error.h"

namespace snowid::internal {

class StateFile {
 public:
  // Locks and reads `path`. A missing file is a fresh start (mark() empty).
  // `layout_description` is stored with the mark; a file written for another
  // layout is refused, since its mark cannot be compared with this one's IDs.
  static Result<StateFile> open(const std::filesystem::path& path,
                                const std::string& layout_description);

  StateFile(StateFile&& other) noexcept;
  StateFile& operator=(StateFile&&) = delete;
  StateFile(const StateFile&) = delete;
  ~StateFile();

  std::optional<std::chrono::milliseconds> mark() const { return mark_; }
  const std::filesystem::path& path() const { return path_; }

  // Replaces the mark durably. On failure the old mark stays in force.
  Status store(std::chrono::milliseconds high_water);

 private:
  StateFile(std::filesystem::path path, std::string layout_description, int lock_fd);

  std::filesystem::path path_;
  std::string layout_description_;
  int lock_fd_ = -1;
  std::optional<std::chrono::milliseconds> mark_;
};

}  // namespace snowid::internal
