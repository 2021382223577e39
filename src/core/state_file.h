// The persisted high-water mark of one generator.
//
// The file holds a Unix-ms timestamp H with the promise that no ID with a
// timestamp above H was issued before the file was last written. It is
// replaced atomically (write a temporary file, fsync it, rename it over the
// old one, fsync the directory), so a crash leaves either the old or the new
// mark, never a torn one. A checksum line catches damage; damage is an error,
// never a silent reset. Only a path with nothing at it is a first start: a
// dangling symbolic link (an unmounted volume), a directory or any other
// non-file is an error. A symbolic link to a file is followed once, at open:
// the file it names is the one read, replaced and locked; the link must go on
// naming it (see verify()).
//
// OWNERSHIP. "<file>.lock" is held with flock() for the lifetime of the
// object, so two processes cannot use one state file at once; with
// `lock_directory` the directory that holds the file is flock()ed too, so
// that no second owner can use it whatever happens to the files inside
// (a removed lock file is re-created by the next process, a directory is not),
// and without it the directory is flock()ed shared, so that no state file is
// used in a directory an owner holds;
// when the path is a link into another directory, the directory that holds
// the link is locked as well, so a second owner is refused whatever the link
// names by the time it starts.
// A lock is only as good as the path still leading to it: verify() checks
// that the directory, the lock file and the state file at their paths (and
// at the path as given, through its link) are still the ones this object
// locked and last wrote. Once it finds otherwise
// (removed, renamed, replaced, unmounted) the object is LOST for good: store()
// refuses, and the generator stops issuing (see generator.cc).
//
// Not thread-safe: the generator serialises calls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "snowid/error.h"

namespace snowid::internal {

class StateFile {
 public:
  // Locks and reads `path`. Nothing at `path` is a fresh start (mark() empty).
  // `layout_description` is stored with the mark; a file written for another
  // layout is refused, since its mark cannot be compared with this one's IDs.
  static Result<StateFile> open(const std::filesystem::path& path,
                                const std::string& layout_description, bool lock_directory);

  StateFile(StateFile&& other) noexcept;
  StateFile& operator=(StateFile&&) = delete;
  StateFile(const StateFile&) = delete;
  ~StateFile();

  std::optional<std::chrono::milliseconds> mark() const { return mark_; }
  // The file read and written: `path` as given, or the file its symbolic link
  // named.
  const std::filesystem::path& path() const { return path_; }

  // Replaces the mark durably, after verify(). On failure the old mark stays in
  // force.
  Status store(std::chrono::milliseconds high_water);

  // Ok while the directory, the lock file and the state file at their paths
  // are the ones this object holds and last wrote; otherwise kStateFile with
  // the cause, now and on every later call.
  Status verify();
  // True once verify() found the ownership lost.
  bool lost() const { return lost_.has_value(); }

 private:
  // What identifies a file: device and inode.
  struct Identity {
    dev_t device = 0;
    ino_t inode = 0;
    bool operator==(const Identity&) const = default;
  };

  StateFile(std::filesystem::path given, std::filesystem::path path,
            std::string layout_description);
  // Ok, or why not; sets `lost` only on evidence that ownership is lost.
  Status check_identities(bool& lost);
  // The steps of open(), in their order: lock the directory holding path_
  // (exclusively for an owner, else shared), an owner's lock of the directory
  // `given` names if it is another, then the lock file, which holds our pid.
  Status lock_directory_of_path(bool lock_directory);
  Status lock_given_directory(const std::filesystem::path& given);
  Status take_lock_file();

  std::filesystem::path given_path_;  // as the caller named it; a link to path_, or path_
  std::filesystem::path path_;
  std::filesystem::path lock_path_;
  std::string layout_description_;
  int directory_fd_ = -1;  // the directory holding path_; flock()ed with lock_directory
  // With lock_directory and a link into another directory: the directory
  // holding the link, flock()ed too.
  int given_directory_fd_ = -1;
  int lock_fd_ = -1;
  Identity directory_;
  // The state file as this object last read or wrote it: an open descriptor
  // (so checking it needs no new one) and the content it holds.
  int written_fd_ = -1;
  std::string written_content_;
  std::optional<std::string> lost_;  // why ownership was lost, once it was
  std::optional<std::chrono::milliseconds> mark_;
};

}  // namespace snowid::internal
