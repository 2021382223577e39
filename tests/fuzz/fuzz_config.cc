// Fuzz target: snowidd's configuration as an operator writes it.
//   apply_toml_file    the bytes as the --config TOML file
//   apply_environment  the same bytes, one SNOWID_<OPTION>=value per line
// then, as snowidd's main() does with what was accepted: validate and, if
// valid, describe (--check-config, /v1/info), the generator, etcd and
// segment options, and the segment store URL with its password redacted.
//
// Input: a TOML file. Checks beyond "no crash, no sanitizer report": no
// exception escapes (a bad file is an error value naming the problem), and
// libpq finds no password but "***" in a redacted PostgreSQL store URL.
#include <libpq-fe.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "config.h"
#include "fuzz_support.h"

namespace {

namespace server = snowid::server;

// The password libpq would connect with for `url`; empty if none.
std::string libpq_password(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return "";
  std::string password;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr) password = o->val;
  }
  PQconninfoFree(options);
  return password;
}

void use(const server::ServerConfig& config) {
  auto resolved = server::resolve_config(config);
  if (!resolved.ok()) return;
  for (const auto& [name, value] : server::describe(config)) {
    SNOWID_FUZZ_CHECK(!name.empty());
    if (name == "etcd_password" || name == "bearer_token") {
      SNOWID_FUZZ_CHECK(value.empty() || value == "(set)");
    }
  }
  (void)server::segment_allocator_options(config);
  const std::string url = server::segment_store_url(config);
  SNOWID_FUZZ_CHECK(url == resolved->segment_url);
  const std::string redacted = server::redact_store_url(url);
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) {
    const std::string shown = libpq_password(redacted);
    SNOWID_FUZZ_CHECK(shown.empty() || shown == "***");
  }
}

// The input's lines as an environ array (with a terminating null).
void apply_as_environment(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    lines.emplace_back(text.substr(0, newline));
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
  }
  std::vector<char*> environ_entries;
  for (std::string& line : lines) environ_entries.push_back(line.data());
  environ_entries.push_back(nullptr);
  server::ServerConfig config;
  snowid::Status applied = server::apply_environment(config, environ_entries.data());
  if (!applied.ok()) {
    SNOWID_FUZZ_CHECK(!applied.error().message.empty());
    return;
  }
  use(config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string kPath = (snowid::fuzz::scratch_directory() / "snowid.toml").string();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream file(kPath, std::ios::binary | std::ios::trunc);
    file.write(text.data(), static_cast<std::streamsize>(text.size()));
    SNOWID_FUZZ_CHECK(file.good());
  }
  server::ServerConfig config;
  snowid::Status applied = server::apply_toml_file(config, kPath);
  if (applied.ok()) {
    use(config);
  } else {
    SNOWID_FUZZ_CHECK(!applied.error().message.empty());
  }
  apply_as_environment(text);
  return 0;
}
