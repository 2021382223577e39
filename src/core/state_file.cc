#include "state_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "snowid/high_water_mark.h"
#include "snowid/time_text.h"

namespace snowid::internal {
namespace {

constexpr std::string_view kHeader = "# snowid state file: written by snowid, do not edit";

// FNV-1a, 64-bit: enough to notice a damaged or hand-edited file.
std::uint64_t checksum(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  return hash;
}

Error state_error(const std::filesystem::path& path, std::string_view what) {
  return Error{ErrorCode::kStateFile, fmt::format("state file {}: {}", path.string(), what)};
}

Error errno_error(const std::filesystem::path& path, std::string_view action) {
  return state_error(path, fmt::format("{}: {}", action, std::strerror(errno)));
}

std::string body(const std::string& layout, std::chrono::milliseconds mark) {
  return fmt::format("{}\nversion=1\nlayout={}\nhigh_water_unix_ms={}\n", kHeader, layout,
                     mark.count());
}

// Writes all of `text` to `fd`.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// The latest mark a state file may hold: the end of the year 9999. Anything
// later was not written by snowid.
constexpr long long kLatestMark = 253'402'300'799'999;

Result<std::chrono::milliseconds> parse(const std::filesystem::path& path,
                                        const std::string& content, const std::string& layout) {
  if (content.empty()) {
    return state_error(path,
                       "damaged: the file is empty (snowid never leaves it so; restore it "
                       "from a backup or, knowing that IDs may repeat, remove it)");
  }
  const auto sum_at = content.rfind("checksum=");
  if (sum_at == std::string::npos) {
    return state_error(path,
                       "damaged: it does not end in a checksum line, so snowid did not "
                       "write it whole; restore it from a backup or, knowing that IDs may "
                       "repeat, remove it");
  }
  const std::string covered = content.substr(0, sum_at);
  const std::string expected = fmt::format("checksum={:016x}\n", checksum(covered));
  if (content.substr(sum_at) != expected) {
    return state_error(path, "damaged: checksum mismatch; restore it from a backup or, knowing "
                             "that IDs may repeat, remove it");
  }
  std::istringstream lines(covered);
  std::string line, stored_layout;
  std::optional<long long> mark;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) return state_error(path, "damaged: line without '='");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "version" && value != "1") {
      return state_error(path, fmt::format("unsupported version {}", value));
    } else if (key == "layout") {
      stored_layout = value;
    } else if (key == "high_water_unix_ms") {
      try {
        std::size_t used = 0;
        mark = std::stoll(value, &used);
        if (used != value.size() || *mark < 0) mark.reset();
        if (mark && *mark > kLatestMark) {
          return state_error(path, fmt::format("high_water_unix_ms {} lies after the year 9999: "
                                               "the file was forged or damaged; restore it from a "
                                               "backup",
                                               *mark));
        }
      } catch (const std::exception&) {
        mark.reset();
      }
    }
  }
  if (!mark) return state_error(path, "damaged: no valid high_water_unix_ms");
  if (stored_layout != layout) {
    return state_error(path, fmt::format("written for layout '{}' but this generator uses '{}'; "
                                         "IDs of different layouts can collide",
                                         stored_layout, layout));
  }
  return std::chrono::milliseconds{*mark};
}

}  // namespace

StateFile::StateFile(std::filesystem::path given, std::filesystem::path path,
                     std::string layout_description)
    : given_path_(std::move(given)),
      path_(std::move(path)),
      lock_path_(path_.string() + ".lock"),
      layout_description_(std::move(layout_description)) {}

StateFile::StateFile(StateFile&& other) noexcept
    : given_path_(std::move(other.given_path_)),
      path_(std::move(other.path_)),
      lock_path_(std::move(other.lock_path_)),
      layout_description_(std::move(other.layout_description_)),
      directory_fd_(std::exchange(other.directory_fd_, -1)),
      given_directory_fd_(std::exchange(other.given_directory_fd_, -1)),
      lock_fd_(std::exchange(other.lock_fd_, -1)),
      directory_(other.directory_),
      written_fd_(std::exchange(other.written_fd_, -1)),
      written_content_(std::move(other.written_content_)),
      lost_(std::move(other.lost_)),
      mark_(other.mark_) {}

StateFile::~StateFile() {
  // Closing releases the flocks.
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (directory_fd_ >= 0) ::close(directory_fd_);
  if (given_directory_fd_ >= 0) ::close(given_directory_fd_);
  if (written_fd_ >= 0) ::close(written_fd_);
}

namespace {

template <typename Identity>
Identity identity_of(const struct stat& st) {
  return Identity{st.st_dev, st.st_ino};
}

// The whole content of the open file `fd`, from offset 0.
std::optional<std::string> read_all(int fd) {
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::pread(fd, buffer, sizeof buffer, static_cast<off_t>(content.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || content.size() > (1 << 20)) return std::nullopt;
    if (n == 0) return content;
    content.append(buffer, static_cast<std::size_t>(n));
  }
}

// The pid another holder wrote into the lock file, for the message.
std::string holder_pid(int fd) {
  char holder[32] = {};
  const ssize_t n = ::pread(fd, holder, sizeof holder - 1, 0);
  std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "?";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "?" : pid;
}

// Resolves what lies at `path`: nothing (nullopt: a first start), a regular
// file (its path, a symbolic link followed), or an error naming what is there.
Result<std::optional<std::filesystem::path>> resolve_state_path(const std::filesystem::path& path) {
  std::error_code ec;
  const auto link = std::filesystem::symlink_status(path, ec);
  if (ec && link.type() != std::filesystem::file_type::not_found) {
    return state_error(path, fmt::format("cannot inspect: {}", ec.message()));
  }
  if (link.type() == std::filesystem::file_type::not_found) {
    return std::optional<std::filesystem::path>{};
  }
  std::filesystem::path target = path;
  if (link.type() == std::filesystem::file_type::symlink) {
    const auto named = std::filesystem::read_symlink(path, ec);
    target = std::filesystem::weakly_canonical(path, ec);
    if (ec || !std::filesystem::exists(target)) {
      return state_error(path, fmt::format("is a symbolic link to {}, which does not exist (an "
                                           "unmounted volume?); refusing to start afresh, which "
                                           "could repeat IDs",
                                           named.string()));
    }
  }
  const auto status = std::filesystem::status(target, ec);
  if (ec) return state_error(path, fmt::format("cannot inspect: {}", ec.message()));
  if (status.type() == std::filesystem::file_type::directory) {
    return state_error(path,
                       "is a directory, not a file: name a file (snowidd keeps "
                       "generator.state inside its state_dir)");
  }
  if (status.type() != std::filesystem::file_type::regular) {
    return state_error(path, "is not a regular file");
  }
  return std::optional<std::filesystem::path>{target};
}

// flock()s the directory open at `fd` (`operation`: LOCK_EX or LOCK_SH) for
// as long as `fd` stays open; kStateLocked, with the pid `lock_path` names if
// it can be read, when another process holds it.
Status flock_directory(int fd, int operation, const std::filesystem::path& dir,
                       const std::filesystem::path& lock_path) {
  if (::flock(fd, operation | LOCK_NB) == 0) return {};
  if (errno != EWOULDBLOCK) return errno_error(dir, "cannot lock the state directory");
  const int peek = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  const std::string pid = peek >= 0 ? holder_pid(peek) : "?";
  if (peek >= 0) ::close(peek);
  return Error{ErrorCode::kStateLocked,
               fmt::format("state directory {} is in use by another process{}", dir.string(),
                           pid == "?" ? "" : fmt::format(" (pid {})", pid))};
}

// The directory holding `path`.
std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

struct ReadState {
  std::chrono::milliseconds mark{0};
  int fd = -1;  // the file read, left open for the caller to close
  std::string content;
};

// Reads and checks the state file at `path` (a regular file).
Result<ReadState> read_state(const std::filesystem::path& path, const std::string& layout) {
  ReadState read;
  read.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (read.fd < 0) return errno_error(path, "cannot read");
  auto content = read_all(read.fd);
  if (!content) {
    const int err = errno;
    ::close(read.fd);
    errno = err;
    return errno_error(path, "cannot read");
  }
  read.content = std::move(*content);
  auto mark = parse(path, read.content, layout);
  if (!mark.ok()) {
    ::close(read.fd);
    return mark.error();
  }
  read.mark = *mark;
  return read;
}

}  // namespace

Result<StateFile> StateFile::open(const std::filesystem::path& given,
                                  const std::string& layout_description, bool lock_directory) {
  auto resolved = resolve_state_path(given);
  if (!resolved.ok()) return resolved.error();
  const std::filesystem::path path = resolved->value_or(given);
  StateFile file(given, path, layout_description);

  const auto dir = directory_of(path);
  file.directory_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (file.directory_fd_ < 0) return errno_error(dir, "cannot open the state directory");
  struct stat st {};
  if (::fstat(file.directory_fd_, &st) != 0) return errno_error(dir, "cannot inspect");
  file.directory_ = identity_of<Identity>(st);
  // An owner locks the directory exclusively. Any other user (`snowid gen
  // --state-file`) takes a shared lock, which an owner's excludes: no state
  // file, whatever its name, is used in a directory a live snowidd owns.
  if (Status locked = flock_directory(file.directory_fd_, lock_directory ? LOCK_EX : LOCK_SH, dir,
                                      file.lock_path_);
      !locked.ok()) {
    return locked.error();
  }
  // A link into another directory: the directory named is this object's
  // too. Locked, a second owner started on it is refused even once the link
  // names another file (which verify() then reports here).
  const auto given_dir = directory_of(given);
  if (lock_directory && path != given) {
    file.given_directory_fd_ = ::open(given_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (file.given_directory_fd_ < 0) {
      return errno_error(given_dir, "cannot open the state directory");
    }
    struct stat given_st {};
    if (::fstat(file.given_directory_fd_, &given_st) != 0) {
      return errno_error(given_dir, "cannot inspect");
    }
    if (identity_of<Identity>(given_st) == file.directory_) {
      ::close(std::exchange(file.given_directory_fd_, -1));  // one directory, locked once
    } else if (Status locked = flock_directory(file.given_directory_fd_, LOCK_EX, given_dir,
                                               given.string() + ".lock");
               !locked.ok()) {
      return locked.error();
    }
  }

  // Lock the lock file that is at the path once we hold it: a file removed
  // between our open() and flock() would be locked in vain.
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(file.lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errno_error(file.lock_path_, "cannot open lock file");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string pid = holder_pid(fd);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Error{
            ErrorCode::kStateLocked,
            fmt::format("state file {} is in use by another process (pid {})", path.string(), pid)};
      }
      errno = err;
      return errno_error(file.lock_path_, "cannot lock");
    }
    struct stat held {};
    struct stat at_path {};
    if (::fstat(fd, &held) == 0 && ::stat(file.lock_path_.c_str(), &at_path) == 0 &&
        held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino) {
      file.lock_fd_ = fd;
      break;
    }
    ::close(fd);
    if (attempt == 10) return state_error(file.lock_path_, "the lock file keeps being replaced");
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  // The pid only feeds the message another process shows; the lock holds
  // without it.
  if (::ftruncate(file.lock_fd_, 0) == 0) (void)::pwrite(file.lock_fd_, pid.data(), pid.size(), 0);

  if (!resolved->has_value()) return file;  // fresh start: nothing at the path
  auto read = read_state(path, layout_description);
  if (!read.ok()) return read.error();
  file.written_fd_ = read->fd;
  file.written_content_ = std::move(read->content);
  file.mark_ = read->mark;
  return file;
}

Status StateFile::check_identities(bool& lost) {
  // Only evidence of loss counts: a check that cannot be made (no descriptor
  // or memory left, an I/O error) fails this call without losing ownership.
  const auto gone = [](int err) { return err == ENOENT || err == ENOTDIR; };
  const auto lose = [&](std::string_view why) {
    lost = true;
    return state_error(path_, why);
  };
  const auto unknown = [this](std::string_view what) {
    return Error{ErrorCode::kStateFile, fmt::format("state file {}: cannot check {}: {}",
                                                    path_.string(), what, std::strerror(errno))};
  };
  struct stat st {};
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : ".";
  errno = 0;
  if (::stat(dir.c_str(), &st) != 0 && !gone(errno)) return unknown("its directory");
  if (errno != 0 || !(identity_of<Identity>(st) == directory_)) {
    return lose(
        "its directory was removed, renamed, replaced or unmounted while "
        "this process used it");
  }
  struct stat held {};
  if (::fstat(lock_fd_, &held) != 0) return unknown("the lock file");
  errno = 0;
  if (::stat(lock_path_.c_str(), &st) != 0 && !gone(errno)) return unknown("the lock file");
  if (errno != 0 || st.st_dev != held.st_dev || st.st_ino != held.st_ino) {
    return lose(
        fmt::format("the lock file {} was removed or replaced while this "
                    "process held it, so another process may now use the "
                    "state",
                    lock_path_.string()));
  }
  if (written_fd_ < 0) {
    errno = 0;
    if (::stat(path_.c_str(), &st) == 0) {
      return lose("a file appeared at the path that this process did not write");
    }
    return gone(errno) ? Status{} : unknown("the state file");
  }
  if (::fstat(written_fd_, &held) != 0) return unknown("the state file");
  errno = 0;
  const bool at_path = ::stat(path_.c_str(), &st) == 0;
  if (!at_path && !gone(errno)) return unknown("the state file");
  if (!at_path || st.st_dev != held.st_dev || st.st_ino != held.st_ino) {
    return lose("the file was removed or replaced by another writer");
  }
  if (given_path_ != path_) {
    // The path as given, through its link, must still lead to this file: a
    // link pointed at a copy or another volume gives the next start (and any
    // second process) another mark.
    errno = 0;
    const bool linked = ::stat(given_path_.c_str(), &st) == 0;
    if (!linked && !gone(errno)) return unknown("the link to the state file");
    if (!linked || st.st_dev != held.st_dev || st.st_ino != held.st_ino) {
      return lose(
          fmt::format("{} no longer leads to this file: the link was removed or "
                      "pointed elsewhere while this process used it",
                      given_path_.string()));
    }
  }
  auto content = read_all(written_fd_);
  if (!content) return unknown("the state file");
  if (*content != written_content_) {
    return lose("the file was modified by another writer");
  }
  return {};
}

Status StateFile::verify() {
  if (!lost_) {
    bool lost = false;
    Status held = check_identities(lost);
    if (!lost) return held;  // ok, or a check that could not be made this time
    lost_ = held.error().message;
  }
  return Error{ErrorCode::kStateFile, fmt::format("{}; this process stops issuing IDs from it for "
                                                  "good (restart it once "
                                                  "the state is sound)",
                                                  *lost_)};
}

Status StateFile::store(std::chrono::milliseconds high_water) {
  if (Status held = verify(); !held.ok()) return held;
  const std::string covered = body(layout_description_, high_water);
  const std::string content = fmt::format("{}checksum={:016x}\n", covered, checksum(covered));
  const std::string name = path_.filename().string();
  const std::string tmp_name = name + ".tmp";
  const std::filesystem::path tmp = path_.string() + ".tmp";
  // The temporary name is this object's alone: whatever is there (a file a
  // crash left, a planted link) is removed, and the file is created anew,
  // never opened through a link, which would write the mark into the file
  // the link names and then rename the link over the state file.
  if (::unlinkat(directory_fd_, tmp_name.c_str(), 0) != 0 && errno != ENOENT) {
    return errno_error(tmp, "cannot remove the old temporary file");
  }
  const int fd = ::openat(directory_fd_, tmp_name.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(tmp, "cannot create");
  const bool written = write_all(fd, content) && ::fsync(fd) == 0;
  const int write_errno = errno;
  if (!written) {
    ::close(fd);
    errno = write_errno;
    return errno_error(tmp, "cannot write");
  }
  // Checked again right before the rename, so that a file put at the path
  // since verify() is found rather than overwritten.
  if (Status held = verify(); !held.ok()) {
    ::close(fd);
    return held;
  }
  if (::renameat(directory_fd_, tmp_name.c_str(), directory_fd_, name.c_str()) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    return errno_error(path_, "cannot replace");
  }
  if (written_fd_ >= 0) ::close(written_fd_);
  written_fd_ = fd;
  written_content_ = content;
  if (::fsync(directory_fd_) != 0) {
    return errno_error(path_.parent_path(), "cannot sync directory");
  }
  mark_ = high_water;
  return {};
}

}  // namespace snowid::internal

namespace snowid {

Result<MarkInspection> inspect_mark(const std::filesystem::path& state_file, const Layout& layout) {
  auto resolved = internal::resolve_state_path(state_file);
  if (!resolved.ok()) return resolved.error();
  MarkInspection out;
  out.path = resolved->value_or(state_file);
  if (resolved->has_value()) {
    auto read = internal::read_state(out.path, describe(layout));
    if (!read.ok()) return read.error();
    out.mark = read->mark;
  }
  // In use if its lock file is locked (tried without waiting, and let go).
  const int fd = ::open((out.path.string() + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      out.holder = internal::holder_pid(fd);
    }
    ::close(fd);
  }
  return out;
}

Status lower_mark(const std::filesystem::path& state_file, const Layout& layout,
                  std::chrono::milliseconds mark) {
  auto file = internal::StateFile::open(state_file, describe(layout),
                                        /*lock_directory=*/true);
  if (!file.ok()) return file.error();
  if (!file->mark()) {
    return invalid_argument(
        fmt::format("state file {}: nothing to lower, there is no mark", file->path().string()));
  }
  if (mark >= *file->mark()) {
    return invalid_argument(
        fmt::format("state file {}: the mark {} is not above {}; it is only "
                    "ever lowered here",
                    file->path().string(), format_time(*file->mark()), format_time(mark)));
  }
  return file->store(mark);
}

}  // namespace snowid
