#include "peer_check.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bounded_http_request.h"

namespace snowid::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using std::chrono::milliseconds;

constexpr std::chrono::seconds kPeerTimeout{2};

struct PeerAnswer {
  std::uint64_t datacenter_id = 0;
  std::uint64_t worker_id = 0;
  milliseconds peer_now{0};  // the peer's clock when it answered
  milliseconds our_mid{0};   // our clock halfway through the exchange
  milliseconds round_trip{0};
};

milliseconds wall_now() {
  return std::chrono::duration_cast<milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
}

// GET /v1/info of `peer` ("host:port"); an error saying why not.
Result<PeerAnswer> ask(const std::string& peer, const std::string& token) {
  const auto colon = peer.rfind(':');
  if (colon == std::string::npos) return invalid_argument("not HOST:PORT");
  try {
    boost::asio::io_context io;
    boost::asio::ip::tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    std::string host = peer.substr(0, colon);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    const auto addresses = resolver.resolve(host, peer.substr(colon + 1));
    http::request<http::empty_body> request{http::verb::get, "/v1/info", 11};
    request.set(http::field::host, host);
    if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    const milliseconds sent = wall_now();
    const auto began = std::chrono::steady_clock::now();
    // Within kPeerTimeout, connect included: a peer that accepts and never
    // answers does not hold the start.
    auto answered = bounded_http_request(io, stream, addresses, request, kPeerTimeout, 1 << 20);
    if (!answered.ok()) return answered.error();
    const auto round_trip =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - began);
    const auto& response = *answered;
    if (response.result_int() != 200) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("answered {} to GET /v1/info", response.result_int())};
    }
    const auto info = nlohmann::json::parse(response.body(), nullptr, false);
    if (!info.is_object() || !info.contains("now_ms") || !info.contains("worker_id")) {
      return Error{ErrorCode::kUnavailable, "its /v1/info is not a snowidd's"};
    }
    PeerAnswer answer;
    answer.datacenter_id = info.value("datacenter_id", std::uint64_t{0});
    answer.worker_id = info.value("worker_id", std::uint64_t{0});
    answer.peer_now = milliseconds{info.value("now_ms", std::int64_t{0})};
    answer.round_trip = round_trip;
    answer.our_mid = sent + round_trip / 2;
    return answer;
  } catch (const std::exception& e) {
    return Error{ErrorCode::kUnavailable, e.what()};
  }
}

std::vector<std::string> split_peers(const std::string& list) {
  std::vector<std::string> peers;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    std::string peer =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!peer.empty()) peers.push_back(std::move(peer));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return peers;
}

}  // namespace

Status check_static_peers(const ServiceConfig& config, std::uint64_t datacenter_id,
                          std::uint64_t worker_id) {
  for (const std::string& peer : split_peers(config.coordinator.peers)) {
    auto answer = ask(peer, config.bearer_token);
    if (!answer.ok()) {
      spdlog::warn("peer {} not checked: {}", peer, answer.error().message);
      continue;
    }
    if (answer->datacenter_id == datacenter_id && answer->worker_id == worker_id) {
      return Error{ErrorCode::kUnavailable,
                   fmt::format("peer {} already serves as datacenter {} worker {}, this node's "
                               "node id: two nodes with one node id issue the same IDs; give "
                               "this node its own worker_id",
                               peer, datacenter_id, worker_id)};
    }
    const milliseconds offset = answer->our_mid - answer->peer_now;
    const milliseconds uncertainty = answer->round_trip / 2;
    if (std::chrono::abs(offset) - uncertainty > config.coordinator.max_peer_clock_offset) {
      return Error{
          ErrorCode::kUnavailable,
          fmt::format(
              "this node's clock is {:.1f} s {} peer {}'s (round trip {} ms), "
              "more than the {:.1f} s allowed; fix its time synchronisation",
              static_cast<double>(std::chrono::abs(offset).count()) / 1000.0,
              offset.count() > 0 ? "ahead of" : "behind", peer, answer->round_trip.count(),
              static_cast<double>(config.coordinator.max_peer_clock_offset.count()) / 1000.0)};
    }
    spdlog::info("peer {} checked: datacenter {} worker {}, clock {} ms apart (round trip {} ms)",
                 peer, answer->datacenter_id, answer->worker_id, offset.count(),
                 answer->round_trip.count());
  }
  return {};
}

}  // namespace snowid::server
