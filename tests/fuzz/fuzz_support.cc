#include "fuzz_support.h"

#include <charconv>
#include <cstdlib>
#include <memory>
#include <string>
#include <system_error>

#include "config.h"
#include "listeners.h"
#include "node.h"
#include "snowid/ext/segment.h"
#include "snowid/ext/segment_store.h"

namespace snowid::fuzz {
namespace {

[[noreturn]] void fail(std::string_view what, const Error& error) {
  std::fprintf(stderr, "fuzz setup: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               error.message.c_str());
  std::abort();
}

void remove_scratch_directory() {
  std::error_code ignored;
  std::filesystem::remove_all(scratch_directory(), ignored);
}

server::IdService* start_service(ServiceKind kind) {
  const bool open = kind == ServiceKind::kOpen;
  server::ServerConfig config;
  config.generator.state_dir = (scratch_directory() / (open ? "open" : "guarded")).string();
  config.generator.layout.preset = open ? "twitter" : "sonyflake";
  config.generator.datacenter_id = open ? 1 : 0;
  config.generator.worker_id = open ? 3 : 7;
  config.max_batch = open ? 10000 : 100;
  config.bearer_token = open ? "" : std::string(kBearerToken);
  config.segment.store = open ? "" : server::kSegmentStoreOff;
  auto resolved = server::resolve_config(config);
  if (!resolved.ok()) fail("config", resolved.error());
  std::filesystem::create_directories(config.generator.state_dir);

  // Leaked on purpose: the services live until exit, and no destructor
  // (joining the segment allocator's thread) runs while libFuzzer exits.
  auto node = server::Node::start(*resolved);
  if (!node.ok()) fail("node", node.error());
  // No tokens_file: the service's one token is config.bearer_token.
  server::IdService::Parts parts{std::move(*node),
                                 nullptr,
                                 nullptr,
                                 nullptr,
                                 server::configured_endpoints(config),
                                 nullptr,
                                 nullptr,
                                 "the fuzz targets open no tag book"};
  const std::string& url = resolved->segment_url;
  if (!url.empty()) {
    auto store = open_segment_store(url);
    if (!store.ok()) fail("segment store", store.error());
    if (Status created = (*store)->create_tag(kSegmentTag, 1, 1000, "fuzz"); !created.ok()) {
      fail("segment tag", created.error());
    }
    auto segments = SegmentAllocator::open(url, server::segment_allocator_options(config));
    if (!segments.ok()) fail("segment allocator", segments.error());
    parts.segments = std::move(*segments);
  }
  return new server::IdService(config, std::move(parts));
}

}  // namespace

const std::filesystem::path& scratch_directory() {
  static const std::filesystem::path kDirectory = [] {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/snowid-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("fuzz setup: mkdtemp");
      std::abort();
    }
    return std::filesystem::path(pattern);
  }();
  static const bool kRemovedAtExit = std::atexit(remove_scratch_directory) == 0;
  (void)kRemovedAtExit;
  return kDirectory;
}

server::IdService& service(ServiceKind kind) {
  static server::IdService* const kOpen = start_service(ServiceKind::kOpen);
  static server::IdService* const kGuarded = start_service(ServiceKind::kGuarded);
  return kind == ServiceKind::kOpen ? *kOpen : *kGuarded;
}

std::size_t check_numbers(std::string_view text, IncreasingCheck& check) {
  std::size_t count = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p != end) {
    if (*p < '0' || *p > '9') {
      ++p;
      continue;
    }
    std::int64_t number = 0;
    const auto [next, ec] = std::from_chars(p, end, number);
    SNOWID_FUZZ_CHECK(ec == std::errc{});
    check.next(number);
    ++count;
    p = next;
  }
  return count;
}

}  // namespace snowid::fuzz
