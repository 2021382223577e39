// What the tests of snowidd's HTTP routes share: starting a snowidd on a
// temporary state directory, and the check of a JSON error answer.
// For test programs built by snowid_server_test (SNOWIDD_PATH).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_process.h"
#include "subprocess.h"

namespace snowid::test {

// A snowidd with `args`, its state in `dir`/state; a failed start fails the test.
inline std::unique_ptr<ServerProcess> start(const TempDir& dir, std::vector<std::string> args = {},
                                            const std::map<std::string, std::string>& env = {}) {
  args.push_back("--state-dir");
  args.push_back(dir.file("state"));
  auto server = std::make_unique<ServerProcess>(SNOWIDD_PATH, args, env);
  EXPECT_TRUE(server->started()) << server->log();
  return server;
}

// `r` is a JSON {"error": "…"} with `status`, the message containing `says`.
inline void expect_json_error(const HttpReply& r, int status, const std::string& says) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.headers.count("content-type") ? r.headers.at("content-type") : "",
            "application/json");
  const auto json = nlohmann::json::parse(r.body, nullptr, false);
  ASSERT_TRUE(json.is_object()) << r.body;
  ASSERT_TRUE(json.contains("error")) << r.body;
  EXPECT_NE(json["error"].get<std::string>().find(says), std::string::npos) << r.body;
}

// The IDs of a JSON answer, {"id":"…"} or {"ids":["…",…]}, as text.
inline std::vector<std::string> texts_of(const HttpReply& r) {
  std::vector<std::string> out;
  const auto json = nlohmann::json::parse(r.body);
  if (json.contains("id")) out.push_back(json["id"].get<std::string>());
  if (json.contains("ids")) {
    for (const auto& s : json["ids"]) out.push_back(s.get<std::string>());
  }
  return out;
}

// The numbers of a format=binary answer: 8 bytes each, little-endian; a
// body whose length is not a multiple of 8 fails the test.
inline std::vector<std::int64_t> binary_numbers_of(const HttpReply& r) {
  EXPECT_EQ(r.body.size() % 8, 0u) << r.body.size();
  std::vector<std::int64_t> out;
  for (std::size_t at = 0; at + 8 <= r.body.size(); at += 8) {
    std::uint64_t bits = 0;
    for (std::size_t byte = 8; byte-- > 0;) {
      bits = bits << 8 | static_cast<unsigned char>(r.body[at + byte]);
    }
    out.push_back(static_cast<std::int64_t>(bits));
  }
  return out;
}

}  // namespace snowid::test
