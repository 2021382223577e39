#include "mac_pid.h"

#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netpacket/packet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace snowid {

namespace {

std::uint64_t field_max(int bits) { return bits == 0 ? 0 : (std::uint64_t{1} << bits) - 1; }

struct Interfaces {
  ifaddrs* list = nullptr;
  Interfaces() {
    if (::getifaddrs(&list) != 0) list = nullptr;
  }
  ~Interfaces() {
    if (list != nullptr) ::freeifaddrs(list);
  }
  Interfaces(const Interfaces&) = delete;
  Interfaces& operator=(const Interfaces&) = delete;
};

// The hardware address of interface `name` (empty if it has none).
std::vector<std::uint8_t> mac_of(const Interfaces& interfaces, const std::string& name) {
  for (const ifaddrs* i = interfaces.list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_PACKET || name != i->ifa_name) {
      continue;
    }
    const auto* link = reinterpret_cast<const sockaddr_ll*>(i->ifa_addr);
    std::vector<std::uint8_t> mac(link->sll_addr, link->sll_addr + link->sll_halen);
    bool all_zero = true;
    for (std::uint8_t b : mac) all_zero = all_zero && b == 0;
    return all_zero ? std::vector<std::uint8_t>{} : mac;
  }
  return {};
}

bool interface_exists(const Interfaces& interfaces, const std::string& name) {
  for (const ifaddrs* i = interfaces.list; i != nullptr; i = i->ifa_next) {
    if (name == i->ifa_name) return true;
  }
  return false;
}

bool same_address(const sockaddr* a, const sockaddr* b) {
  if (a == nullptr || b == nullptr || a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

// The interface holding the first address the hostname resolves to (Java's
// NetworkInterface.getByInetAddress(InetAddress.getLocalHost())), or "".
std::string interface_of_hostname(const Interfaces& interfaces, std::string* address) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host, nullptr, &hints, &found) != 0 || found == nullptr) return "";
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> owned(found, ::freeaddrinfo);
  char text[NI_MAXHOST] = {};
  if (::getnameinfo(found->ai_addr, found->ai_addrlen, text, sizeof text, nullptr, 0,
                    NI_NUMERICHOST) == 0) {
    *address = text;
  }
  for (const ifaddrs* i = interfaces.list; i != nullptr; i = i->ifa_next) {
    if (same_address(i->ifa_addr, found->ai_addr)) return i->ifa_name;
  }
  return "";
}

std::string mac_text(const std::vector<std::uint8_t>& mac) {
  std::string text;
  for (std::uint8_t b : mac) text += fmt::format("{}{:02x}", text.empty() ? "" : ":", b);
  return text;
}

}  // namespace

std::uint64_t mac_datacenter_id(std::span<const std::uint8_t> mac,
                                std::uint64_t max_datacenter_id) {
  if (mac.size() < 2) return 0;
  const std::uint64_t low = mac[mac.size() - 2];
  const std::uint64_t high = mac[mac.size() - 1];
  return ((low | high << 8) >> 6) % (max_datacenter_id + 1);
}

std::uint64_t pid_worker_id(std::uint64_t datacenter_id, std::int64_t pid,
                            std::uint64_t max_worker_id) {
  // Java's String.hashCode: h = 31 * h + c over the UTF-16 units, wrapping at 32 bits.
  const std::string text = std::to_string(datacenter_id) + std::to_string(pid);
  std::uint32_t hash = 0;
  for (char c : text) hash = 31u * hash + static_cast<unsigned char>(c);
  return (hash & 0xffffu) % (max_worker_id + 1);
}

Result<MacPidNodeId> mac_pid_node_id(const Layout& layout, std::int64_t pid,
                                     const std::optional<std::string>& interface) {
  const Interfaces interfaces;
  if (interfaces.list == nullptr) {
    return Error{ErrorCode::kUnavailable, "cannot list this machine's network interfaces"};
  }
  MacPidNodeId id;
  id.pid = pid;
  const std::uint64_t max_datacenter = field_max(layout.datacenter_bits);
  std::vector<std::uint8_t> mac;
  if (interface) {
    if (!interface_exists(interfaces, *interface)) {
      return invalid_argument(fmt::format("no network interface '{}' on this machine", *interface));
    }
    mac = mac_of(interfaces, *interface);
    if (mac.empty()) {
      return invalid_argument(fmt::format("network interface '{}' has no MAC address", *interface));
    }
    id.interface = *interface;
    id.how = "the interface given";
    id.datacenter_id = mac_datacenter_id(mac, max_datacenter);
  } else {
    std::string address;
    id.interface = interface_of_hostname(interfaces, &address);
    if (id.interface.empty()) {
      id.datacenter_id = 1 % (max_datacenter + 1);
      id.how = fmt::format(
          "the hostname's address{} is on no interface, so the libraries take datacenter 1",
          address.empty() ? "" : " " + address);
    } else {
      mac = mac_of(interfaces, id.interface);
      id.datacenter_id = mac.empty() ? 0 : mac_datacenter_id(mac, max_datacenter);
      id.how = fmt::format("the interface holding the hostname's address {}{}", address,
                           mac.empty() ? ", which has no MAC, so datacenter 0" : "");
    }
  }
  id.mac = mac_text(mac);
  id.worker_id = pid_worker_id(id.datacenter_id, pid, field_max(layout.worker_bits));
  return id;
}

double mac_pid_collision_odds(const Layout& layout, std::uint64_t processes, bool one_machine) {
  const double pairs =
      static_cast<double>(field_max(layout.worker_bits) + 1) *
      (one_machine ? 1.0 : static_cast<double>(field_max(layout.datacenter_bits) + 1));
  double all_distinct = 1.0;
  for (std::uint64_t k = 1; k < processes && all_distinct > 0; ++k) {
    all_distinct *= std::max(0.0, 1.0 - static_cast<double>(k) / pairs);
  }
  return 1.0 - all_distinct;
}

}  // namespace snowid
