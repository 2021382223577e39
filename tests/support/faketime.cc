#include "faketime.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "missing.h"

namespace snowid::test {

std::string faketime_library(bool multithreaded) {
  if (pretended_missing("faketime")) return "";
  const char* name = multithreaded ? "libfaketimeMT.so.1" : "libfaketime.so.1";
  for (const char* dir :
       {"/usr/lib/x86_64-linux-gnu/faketime/", "/usr/lib/aarch64-linux-gnu/faketime/"}) {
    const std::string path = std::string(dir) + name;
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

std::string faketime_offset(std::chrono::milliseconds offset) {
  const long long ms = offset.count();
  const long long magnitude = ms < 0 ? -ms : ms;
  char text[40];
  std::snprintf(text, sizeof text, "%c%lld.%03lld000", ms < 0 ? '-' : '+', magnitude / 1000,
                magnitude % 1000);
  return text;
}

namespace {

// What every faked process gets: the library, the real CLOCK_MONOTONIC, and
// ASan's consent to a preloaded library that is not the runtime.
std::map<std::string, std::string> base_env(const std::string& library) {
  return {{"LD_PRELOAD", library},
          {"FAKETIME_DONT_FAKE_MONOTONIC", "1"},
          {"ASAN_OPTIONS", "verify_asan_link_order=0"}};
}

}  // namespace

std::map<std::string, std::string> faketime_fixed_env(std::chrono::milliseconds offset) {
  const std::string library = faketime_library();
  if (library.empty()) return {};
  auto env = base_env(library);
  env["FAKETIME"] = faketime_offset(offset);
  return env;
}

FaketimeControl::FaketimeControl()
    : library_(faketime_library(true)), file_(dir_.file("faketime.rc")) {
  set_offset(std::chrono::milliseconds{0});
}

std::map<std::string, std::string> FaketimeControl::env() const {
  auto env = base_env(library_);
  env["FAKETIME_TIMESTAMP_FILE"] = file_;
  env["FAKETIME_NO_CACHE"] = "1";
  return env;
}

void FaketimeControl::set_offset(std::chrono::milliseconds offset) {
  const std::string tmp = dir_.file("faketime.rc." + std::to_string(++generation_));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << faketime_offset(offset) << '\n';
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), file_.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + tmp + " to " + file_);
  }
}

}  // namespace snowid::test
