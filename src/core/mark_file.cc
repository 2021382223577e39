// MarkFile is a StateFile (state_file.h) behind a public header: one writer
// of durable marks in the code base.
#include "mark_file.h"

#include "state_file.h"

namespace snowid {

struct MarkFile::Impl {
  internal::StateFile file;
};

MarkFile::MarkFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MarkFile::~MarkFile() = default;

Result<std::unique_ptr<MarkFile>> MarkFile::open(const std::filesystem::path& path,
                                                 const std::string& description) {
  auto file = internal::StateFile::open(path, description, /*lock_directory=*/false);
  if (!file.ok()) return file.error();
  return std::unique_ptr<MarkFile>(new MarkFile(std::make_unique<Impl>(Impl{std::move(*file)})));
}

std::optional<std::chrono::milliseconds> MarkFile::mark() const { return impl_->file.mark(); }

const std::filesystem::path& MarkFile::path() const { return impl_->file.path(); }

Status MarkFile::store(std::chrono::milliseconds mark) { return impl_->file.store(mark); }

}  // namespace snowid
