// The CLI's calls of a running snowidd over its HTTP API (`snowid tag`,
// `snowid business`): one request per call, on a connection of its own,
// plain or TLS, within a timeout (bounded_http_request.h).
//
// The node is `--node URL` (http://HOST:PORT or https://HOST:PORT, an
// optional path prefix for a proxy that routes by path) with `--cacert FILE`
// to verify an https node (the system's CAs otherwise); the bearer token is
// read from `--token-file FILE` or else the SNOWID_TOKEN environment
// variable, never from the command line, where `ps` would show it.
//
// Single-threaded, as the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "snowid/error.h"

namespace snowid::cli {

// What the options of a node command name: where the node is and how to
// prove the caller.
struct NodeOptions {
  std::string url = "http://127.0.0.1:8080";
  std::string cacert;      // PEM file of the CA(s) that verify an https node
  std::string token_file;  // empty: SNOWID_TOKEN, or no token
  double timeout_seconds = 10;
};

// Adds --node, --cacert, --token-file and --timeout to `command`.
void add_node_options(CLI::App& command, NodeOptions& options);

// A node's answer to one call.
struct NodeReply {
  unsigned status = 0;
  nlohmann::json body;  // the JSON the node answered with
};

// Sends `method target` (`target` starting with "/v1/") with `body` (JSON
// text, empty: none) to the node. kInvalidArgument for options that do not
// make a node (a URL that is not http(s)://HOST:PORT, an unreadable token
// or CA file); kUnavailable if the node does not answer, or answers with
// other than a JSON object. A refusal (4xx, 5xx) is an error: kUnavailable
// (exit 1) whose message is the node's own ("{"error": ...}"), on one line.
Result<NodeReply> call_node(const NodeOptions& options, std::string_view method,
                            std::string_view target, std::string_view body = {});

// `text` made safe to put in a request's path: %-escapes every byte but
// RFC 3986's unreserved ones.
std::string path_segment(std::string_view text);

}  // namespace snowid::cli
