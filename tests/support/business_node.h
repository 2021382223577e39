// A snowidd that serves business IDs, for the tests of each protocol: segment
// mode on a SQLite store in a temporary directory and a tokens file with an
// admin token ("ops-secret") and one that opens the tags "orders", "plain"
// and "small" only ("orders-secret").
#pragma once

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "server_process.h"
#include "subprocess.h"

namespace snowid::test {

inline constexpr const char* kAdminToken = "ops-secret";
inline constexpr const char* kOrdersToken = "orders-secret";

inline constexpr const char* kBusinessTokensFile = R"([[token]]
name = "ops"
token = "ops-secret"
admin = true

[[token]]
name = "orders-svc"
token = "orders-secret"
tags = ["orders", "plain", "small"]
)";

// Starts snowidd in `dir` with `extra` arguments (say, "--resp",
// "127.0.0.1:0" or "--max-batch", "100"); check started() on the result.
inline std::unique_ptr<ServerProcess> start_business_node(const TempDir& dir,
                                                          std::vector<std::string> extra = {}) {
  std::ofstream(dir.file("tokens.toml")) << kBusinessTokensFile;
  std::vector<std::string> args{"--state-dir",     dir.file("state"),
                                "--segment-store", "sqlite://" + dir.file("segments.db"),
                                "--tokens-file",   dir.file("tokens.toml")};
  args.insert(args.end(), extra.begin(), extra.end());
  return std::make_unique<ServerProcess>(SNOWIDD_PATH, args);
}

// `method target` over HTTP with `token` as the bearer token and `body`
// (JSON) if any, on a connection of its own.
inline HttpReply http_with_token(int port, const std::string& method, const std::string& target,
                                 const std::string& token, const std::string& body = "") {
  std::string bytes = method + " " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                      token + "\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST" || method == "PATCH") {
    bytes += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n";
  }
  bytes += "\r\n" + body;
  return http_raw(port, bytes);
}

// Creates `tag` with `template_text` (empty: plain numbers) through the admin
// HTTP route; the reply's status is 201 on success.
inline HttpReply create_tag(const ServerProcess& node, const std::string& tag,
                            const std::string& template_text) {
  return http_with_token(node.port(), "POST", "/v1/tags", kAdminToken,
                         R"({"tag": ")" + tag + R"(", "step": 50, "template": ")" +
                             template_text + R"("})");
}

}  // namespace snowid::test
