#include "audit_tail.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "audit_format.h"

namespace snowid::audit {
namespace {

constexpr std::size_t kChunkBytes = 1 << 20;

// Follows the lines of one log, keeping the highest record of one node.
class LatestFinder {
 public:
  LatestFinder(const Layout& layout, std::optional<AuditNode> node)
      : layout_(layout), layout_text_(describe(layout)), node_(node) {}

  void line(std::string_view text) {
    if (auto named = header_layout(text)) {
      layout_matches_ = *named == layout_text_;
      return;
    }
    if (text.empty() || text.front() == '#' || !layout_matches_) return;
    auto record = parse_record(text);
    if (!record.ok()) return;
    if (node_ && (record->datacenter != node_->datacenter || record->worker != node_->worker)) {
      return;
    }
    if (!latest_ || record->last > latest_->id) {
      auto fields = decode(layout_, record->last);
      if (fields.ok()) latest_ = LatestAudited{record->last, fields->timestamp};
    }
  }

  std::optional<LatestAudited> latest() const { return latest_; }

 private:
  const Layout& layout_;
  const std::string layout_text_;
  const std::optional<AuditNode> node_;
  bool layout_matches_ = true;  // records before any header: this layout's
  std::optional<LatestAudited> latest_;
};

}  // namespace

Result<std::optional<LatestAudited>> latest_audited(const std::filesystem::path& path,
                                                    const Layout& layout,
                                                    std::optional<AuditNode> node,
                                                    std::uint64_t max_bytes) {
  auto failed = [&path](std::string_view action) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("audit log {}: {}: {}", path.string(), action, std::strerror(errno))};
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return failed("cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return failed("cannot inspect");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  auto offset = static_cast<off_t>(size > max_bytes ? size - max_bytes : 0);
  bool skip_partial = offset > 0;  // the tail starts mid-line
  LatestFinder finder(layout, node);
  std::string pending;
  auto buffer = std::make_unique_for_overwrite<char[]>(kChunkBytes);
  for (;;) {
    const ssize_t n = ::pread(fd, buffer.get(), kChunkBytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return failed("cannot read");
    }
    if (n == 0) break;
    offset += n;
    pending.append(buffer.get(), static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      if (!skip_partial) finder.line(std::string_view(pending).substr(start, end - start));
      skip_partial = false;
    }
    pending.erase(0, start);
  }
  ::close(fd);
  return finder.latest();  // `pending`, a last line without '\n', is torn
}

}  // namespace snowid::audit
