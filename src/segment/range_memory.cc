#include "range_memory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "database_url.h"
#include "durable_file.h"

namespace snowid::segment {
namespace {

constexpr std::string_view kHeader =
    "# snowid segment ranges: the highest range end each store handed this node, per tag; written "
    "by snowid, do not edit";

using Ends = std::map<std::pair<std::string, std::string>, std::int64_t>;

std::string body(const Ends& ends) {
  std::string out = fmt::format("{}\nversion=1\n", kHeader);
  for (const auto& [key, end] : ends)
    out += fmt::format("range {} {} {}\n", key.first, key.second, end);
  return out;
}

Error damaged(const std::filesystem::path& path, std::string_view what) {
  return Error{
      ErrorCode::kStateFile,
      fmt::format(
          "segment range memory {}: damaged: {}; restore it from a backup of the state directory "
          "or, knowing that a restored segment store then goes unnoticed, remove it",
          path.string(), what)};
}

// The ends the file's one form holds.
Result<Ends> parse(const std::filesystem::path& path, const std::string& content) {
  auto covered = internal::checksummed_body(content);
  if (!covered.ok()) return damaged(path, covered.error().message);
  Ends ends;
  std::istringstream lines{std::string(*covered)};
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("range ")) continue;
    std::istringstream fields(line.substr(6));
    std::string store, tag, end_text;
    fields >> store >> tag >> end_text;
    std::int64_t end = 0;
    const auto [at, ec] = std::from_chars(end_text.data(), end_text.data() + end_text.size(), end);
    if (ec != std::errc{} || at != end_text.data() + end_text.size() || end < 0) {
      return damaged(path, fmt::format("bad range line '{}'", line.substr(0, 120)));
    }
    ends[{store, tag}] = end;
  }
  if (*covered != body(ends)) {
    return damaged(path, "its lines are not the one form snowid writes (made or edited by hand?)");
  }
  return ends;
}

}  // namespace

Result<std::unique_ptr<RangeMemory>> RangeMemory::open(const std::filesystem::path& path) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const int directory_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory_fd < 0) {
    return Error{ErrorCode::kStateFile,
                 fmt::format("segment range memory {}: cannot open its directory: {}",
                             path.string(), std::strerror(errno))};
  }
  Ends ends;
  std::error_code ec;
  if (std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream content;
    content << in.rdbuf();
    if (!in) {
      ::close(directory_fd);
      return Error{ErrorCode::kStateFile,
                   fmt::format("segment range memory {}: cannot read it", path.string())};
    }
    auto parsed = parse(path, content.str());
    if (!parsed.ok()) {
      ::close(directory_fd);
      return parsed.error();
    }
    ends = std::move(*parsed);
  }
  return std::unique_ptr<RangeMemory>(new RangeMemory(path, directory_fd, std::move(ends)));
}

RangeMemory::RangeMemory(std::filesystem::path path, int directory_fd, Ends ends)
    : path_(std::move(path)), directory_fd_(directory_fd), ends_(std::move(ends)) {}

RangeMemory::~RangeMemory() { ::close(directory_fd_); }

std::optional<std::int64_t> RangeMemory::end_of(std::string_view store,
                                                std::string_view tag) const {
  std::lock_guard lock(mutex_);
  const auto it = ends_.find({std::string(store), std::string(tag)});
  if (it == ends_.end()) return std::nullopt;
  return it->second;
}

Status RangeMemory::remember(std::string_view store, std::string_view tag, std::int64_t end) {
  std::lock_guard lock(mutex_);
  Ends next = ends_;
  std::int64_t& kept = next[{std::string(store), std::string(tag)}];
  if (kept >= end) return {};  // a new entry starts at 0, below every end
  kept = end;
  int written_fd = -1;
  Status replaced = internal::replace_file_atomically(
      directory_fd_, path_, internal::with_checksum(body(next)), nullptr, written_fd);
  if (written_fd >= 0) ::close(written_fd);
  if (!replaced.ok()) {
    return Error{ErrorCode::kUnavailable,
                 fmt::format("segment range memory: {}", replaced.error().message)};
  }
  ends_ = std::move(next);
  return {};
}

namespace {

// The query parameters that name a database or its table.
constexpr std::array<std::string_view, 5> kNamingParameters = {"host", "hostaddr", "port", "dbname",
                                                               "layout"};

std::string naming_query(std::string_view query) {
  std::string kept;
  for (std::size_t at = 0; at < query.size();) {
    const std::size_t amp = std::min(query.find('&', at), query.size());
    const std::string_view pair = query.substr(at, amp - at);
    const std::string_view key = pair.substr(0, pair.find('='));
    for (std::string_view naming : kNamingParameters) {
      if (key == naming) kept += fmt::format("{}{}", kept.empty() ? "?" : "&", pair);
    }
    at = amp + 1;
  }
  return kept;
}

}  // namespace

std::string segment_store_name(std::string_view url) {
  constexpr std::string_view kSqlite = "sqlite://";
  if (url.starts_with(kSqlite)) {
    const std::filesystem::path file(url.substr(kSqlite.size()));
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    return std::string(kSqlite) + (ec ? file : absolute).lexically_normal().string();
  }
  const std::optional<DatabaseUrlAuthority> parts = database_url_authority(url);
  if (!parts) return "store";
  const std::size_t authority = parts->begin;
  // Without user:password@, which libpq ends at its first '@'.
  const std::size_t host = parts->libpq_host();
  const std::size_t host_end = std::min(url.find_first_of("/?", host), url.size());
  const std::string_view rest = url.substr(host_end);
  const std::size_t query_at = std::min(rest.find('?'), rest.size());
  std::string name =
      fmt::format("{}{}{}{}", url.substr(0, authority), url.substr(host, host_end - host),
                  rest.substr(0, query_at),
                  query_at < rest.size() ? naming_query(rest.substr(query_at + 1)) : "");
  for (char& c : name) {
    if (c == ' ' || c == '\t' || c == '\n') c = '_';  // one field of the memory's lines
  }
  return name;
}

}  // namespace snowid::segment
