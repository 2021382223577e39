// Whether the first request a new RESP or Thrift connection sent (the bytes
// waiting when it is accepted, which may end anywhere) authenticates: what
// the unauthenticated share judges it by (unauthenticated_share.h).
#include <gtest/gtest.h>

#include <string>

#include "resp_commands.h"
#include "thrift_service.h"

namespace snowid::server {
namespace {

TEST(FirstRequestTest, RespAuthOrHelloAuthenticatesAndTheRestDoesNot) {
  for (const char* bytes : {"AUTH s3cret\r\n", "auth default s3cret\r\n", "  Auth x\r\n",
                            "*2\r\n$4\r\nAUTH\r\n$6\r\ns3cret\r\n", "*2\r\n$4\r\nauth\r\n",
                            "*6\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n"}) {
    EXPECT_EQ(resp_first_command_authenticates(bytes), true) << bytes;
  }
  for (const char* bytes :
       {"PING\r\n", "*1\r\n$4\r\nPING\r\n", "*1\r\n$9\r\nSNOWID.ID\r\n", "AUTHX\r\n",
        "*1\r\n:4\r\n", "*1\r\n$x\r\n", "SNOWID.ID", "*1\r\n$123456789\r\n"}) {
    EXPECT_EQ(resp_first_command_authenticates(bytes), false) << bytes;
  }
  // Not whole yet: cannot be told.
  for (const char* bytes :
       {"", "AU", "AUTH", "  ", "*", "*2\r", "*2\r\n", "*2\r\n$4", "*2\r\n$4\r\nAUT"}) {
    EXPECT_EQ(resp_first_command_authenticates(bytes), std::nullopt) << bytes;
  }
  // A count line that never ends is no command.
  EXPECT_EQ(resp_first_command_authenticates("*" + std::string(100, '1')), false);
}

// A framed call: the frame's length, then the binary protocol's message
// header, strict or old, then nothing (the tests look at the name only).
std::string call(const std::string& method, bool strict) {
  const auto be32 = [](std::uint32_t n) {
    return std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                       static_cast<char>(n >> 8), static_cast<char>(n)};
  };
  const auto length = static_cast<std::uint32_t>(method.size());
  const std::string header = strict ? be32(0x80010001u) + be32(length) + method
                                    : be32(length) + method + std::string(1, '\1');
  return be32(static_cast<std::uint32_t>(header.size() + 5)) + header + be32(1) +
         std::string(1, '\0');
}

TEST(FirstRequestTest, ThriftAuthenticateIsTheOneCallThatAuthenticates) {
  for (bool strict : {true, false}) {
    SCOPED_TRACE(strict ? "strict" : "old");
    EXPECT_EQ(thrift_first_call_authenticates(call("authenticate", strict)), true);
    EXPECT_EQ(thrift_first_call_authenticates(call("get_id", strict)), false);
    EXPECT_EQ(thrift_first_call_authenticates(call("authenticatf", strict)), false);
    const std::string whole = call("authenticate", strict);
    for (std::size_t cut : {std::size_t{0}, std::size_t{4}, std::size_t{7}, whole.size() - 12}) {
      EXPECT_EQ(thrift_first_call_authenticates(whole.substr(0, cut)), std::nullopt) << cut;
    }
  }
}

}  // namespace
}  // namespace snowid::server
