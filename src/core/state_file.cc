#include "state_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "durable_file.h"
#include "high_water_mark.h"
#include "time_text.h"

namespace snowid::internal {
namespace {

constexpr std::string_view kHeader = "# snowid state file: written by snowid, do not edit";

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

// The latest mark a state file may hold: the end of the year 9999. Anything
// later was not written by snowid.
constexpr long long kLatestMark = 253'402'300'799'999;

// The file has one form, the one body() writes, followed by its checksum
// line: any other content (a line added, repeated or moved, bytes after the
// checksum) is damage, even with a valid checksum.
Result<std::chrono::milliseconds> parse(const std::filesystem::path& path,
                                        const std::string& content, const std::string& layout) {
  constexpr std::string_view kRepair =
      "restore it from a backup or, knowing that IDs may repeat, remove it";
  if (content.empty()) {
    return state_error(
        path, fmt::format("damaged: the file is empty (snowid never leaves it so; {})", kRepair));
  }
  auto covered = internal::checksummed_body(content);
  if (!covered.ok()) {
    return state_error(
        path, fmt::format("damaged: {}, so snowid did not write it whole (or it was edited); {}",
                          covered.error().message, kRepair));
  }
  std::istringstream lines{std::string(*covered)};
  std::string line, stored_layout, mark_text;
  for (std::getline(lines, line); lines; std::getline(lines, line)) {
    if (line.starts_with("version=") && line != "version=1") {
      return state_error(path, fmt::format("unsupported version {}", line.substr(8)));
    }
    if (line.starts_with("layout=")) stored_layout = line.substr(7);
    if (line.starts_with("high_water_unix_ms=")) mark_text = line.substr(19);
  }
  long long mark = -1;
  const auto [end, ec] =
      std::from_chars(mark_text.data(), mark_text.data() + mark_text.size(), mark);
  if (ec != std::errc{} || end != mark_text.data() + mark_text.size() || mark < 0) {
    return state_error(path, fmt::format("damaged: no valid high_water_unix_ms; {}", kRepair));
  }
  if (*covered != body(stored_layout, std::chrono::milliseconds{mark})) {
    return state_error(
        path, fmt::format(
                  "damaged: its checksum is valid but its lines are not the one form snowid writes "
                  "(a header, version, layout and mark line once each, in that order, then the "
                  "checksum line and nothing after it): it was made or edited by hand; {}",
                  kRepair));
  }
  if (mark > kLatestMark) {
    return state_error(path, fmt::format("high_water_unix_ms {} lies after the year 9999: the file "
                                         "was forged or damaged; restore it from a backup",
                                         mark));
  }
  if (stored_layout != layout) {
    return state_error(path, fmt::format("written for layout '{}' but this generator uses '{}'; "
                                         "IDs of different layouts can collide",
                                         stored_layout, layout));
  }
  return std::chrono::milliseconds{mark};
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

Status StateFile::lock_directory_of_path(bool lock_directory) {
  const auto dir = directory_of(path_);
  directory_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd_ < 0) return errno_error(dir, "cannot open the state directory");
  struct stat st {};
  if (::fstat(directory_fd_, &st) != 0) return errno_error(dir, "cannot inspect");
  directory_ = identity_of<Identity>(st);
  // An owner locks the directory exclusively. Any other user (`snowid gen
  // --state-file`) takes a shared lock, which an owner's excludes: no state
  // file, whatever its name, is used in a directory a live snowidd owns.
  return flock_directory(directory_fd_, lock_directory ? LOCK_EX : LOCK_SH, dir, lock_path_);
}

Status StateFile::lock_given_directory(const std::filesystem::path& given) {
  // A link into another directory: the directory named is this object's
  // too. Locked, a second owner started on it is refused even once the link
  // names another file (which verify() then reports here).
  const auto given_dir = directory_of(given);
  given_directory_fd_ = ::open(given_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (given_directory_fd_ < 0) {
    return errno_error(given_dir, "cannot open the state directory");
  }
  struct stat given_st {};
  if (::fstat(given_directory_fd_, &given_st) != 0) {
    return errno_error(given_dir, "cannot inspect");
  }
  if (identity_of<Identity>(given_st) == directory_) {
    ::close(std::exchange(given_directory_fd_, -1));  // one directory, locked once
    return {};
  }
  return flock_directory(given_directory_fd_, LOCK_EX, given_dir, given.string() + ".lock");
}

Status StateFile::take_lock_file() {
  // Lock the lock file that is at the path once we hold it: a file removed
  // between our open() and flock() would be locked in vain.
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errno_error(lock_path_, "cannot open lock file");
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string pid = holder_pid(fd);
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Error{ErrorCode::kStateLocked,
                     fmt::format("state file {} is in use by another process (pid {})",
                                 path_.string(), pid)};
      }
      errno = err;
      return errno_error(lock_path_, "cannot lock");
    }
    struct stat held {};
    struct stat at_path {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &at_path) == 0 &&
        held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino) {
      lock_fd_ = fd;
      break;
    }
    ::close(fd);
    if (attempt == 10) return state_error(lock_path_, "the lock file keeps being replaced");
  }
  const std::string pid = fmt::format("{}\n", ::getpid());
  // The pid only feeds the message another process shows; the lock holds
  // without it.
  if (::ftruncate(lock_fd_, 0) == 0) (void)::pwrite(lock_fd_, pid.data(), pid.size(), 0);
  return {};
}

Result<StateFile> StateFile::open(const std::filesystem::path& given,
                                  const std::string& layout_description, bool lock_directory) {
  auto resolved = resolve_state_path(given);
  if (!resolved.ok()) return resolved.error();
  const std::filesystem::path path = resolved->value_or(given);
  StateFile file(given, path, layout_description);
  if (Status locked = file.lock_directory_of_path(lock_directory); !locked.ok()) {
    return locked.error();
  }
  if (lock_directory && path != given) {
    if (Status locked = file.lock_given_directory(given); !locked.ok()) return locked.error();
  }
  if (Status locked = file.take_lock_file(); !locked.ok()) return locked.error();

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
  const std::string content = internal::with_checksum(body(layout_description_, high_water));
  // Checked again right before the rename, so that a file put at the path
  // since verify() is found rather than overwritten.
  int renamed_fd = -1;
  Status replaced = internal::replace_file_atomically(
      directory_fd_, path_, content, [this] { return verify(); }, renamed_fd);
  if (renamed_fd >= 0) {
    if (written_fd_ >= 0) ::close(written_fd_);
    written_fd_ = renamed_fd;
    written_content_ = content;
  }
  if (!replaced.ok()) {
    const std::string& message = replaced.error().message;
    if (message.starts_with("state file ")) return replaced;  // from verify()
    return Error{ErrorCode::kStateFile, "state file " + message};
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
