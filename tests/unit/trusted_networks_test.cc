// TrustedNetworks: which peers the stream listeners'
// <protocol>_trusted_networks option trusts.
#include "trusted_networks.h"

#include <gtest/gtest.h>

namespace snowid::server {
namespace {

boost::asio::ip::address ip(const char* text) { return boost::asio::ip::make_address(text); }

TEST(TrustedNetworksTest, AddressesInsideAPrefixAreTrustedAndOthersAreNot) {
  auto networks = TrustedNetworks::parse(" 10.1.0.0/16, 192.168.7.9 ,fd00::/8");
  ASSERT_TRUE(networks.ok()) << networks.error().message;
  EXPECT_TRUE(networks->contains(ip("10.1.255.3")));
  EXPECT_FALSE(networks->contains(ip("10.2.0.1")));
  EXPECT_TRUE(networks->contains(ip("192.168.7.9")));  // a bare address: a network of one
  EXPECT_FALSE(networks->contains(ip("192.168.7.8")));
  EXPECT_TRUE(networks->contains(ip("fd12::1")));
  EXPECT_FALSE(networks->contains(ip("fe80::1")));
}

TEST(TrustedNetworksTest, PrefixesThatAreNotWholeBytesCompareOnlyTheirBits) {
  auto networks = TrustedNetworks::parse("172.16.0.0/12");
  ASSERT_TRUE(networks.ok());
  EXPECT_TRUE(networks->contains(ip("172.31.255.255")));
  EXPECT_FALSE(networks->contains(ip("172.32.0.0")));
  EXPECT_FALSE(networks->contains(ip("172.15.255.255")));
}

TEST(TrustedNetworksTest, AnIpv4MappedPeerOnADualStackListenerMatchesIpv4Networks) {
  auto networks = TrustedNetworks::parse("127.0.0.0/8");
  ASSERT_TRUE(networks.ok());
  EXPECT_TRUE(networks->contains(ip("::ffff:127.0.0.1")));
  EXPECT_FALSE(networks->contains(ip("::1")));
}

TEST(TrustedNetworksTest, NothingIsTrustedByAnEmptyListAndEverythingByZeroPrefixes) {
  auto none = TrustedNetworks::parse("");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->contains(ip("127.0.0.1")));
  auto all = TrustedNetworks::parse("0.0.0.0/0, ::/0");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->contains(ip("203.0.113.5")));
  EXPECT_TRUE(all->contains(ip("2001:db8::5")));
}

TEST(TrustedNetworksTest, TextThatIsNoNetworkIsRefusedByName) {
  for (const char* bad : {"10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0/8", "localhost",
                          "10.0.0.0/-1", "10.0.0.0/8x", "10.0.0.0/8, nonsense"}) {
    SCOPED_TRACE(bad);
    auto parsed = TrustedNetworks::parse(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message.find("CIDR"), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace snowid::server
