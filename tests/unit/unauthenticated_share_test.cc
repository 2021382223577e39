// Which unauthenticated connections hold a stream listener's share, and
// which one a new connection displaces (unauthenticated_share.h).
#include "unauthenticated_share.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace snowid::server {
namespace {

using Standing = UnauthenticatedShare::Standing;

// A share whose members, when displaced, say so in `evicted`.
class Share {
 public:
  // A new member named `name` from `source`; null if refused.
  UnauthenticatedShare::Handle admit(const std::string& name, Standing standing,
                                     const std::string& source = "10.0.0.1",
                                     std::int64_t slots = 4) {
    auto admission =
        share.admit(source, standing, slots, [this, name] { evicted.push_back(name); });
    if (admission.evict) admission.evict();
    return admission.member;
  }
  UnauthenticatedShare share;
  std::vector<std::string> evicted;
};

TEST(UnauthenticatedShareTest, TheOldestSilentConnectionMakesRoom) {
  Share s;
  for (const char* name : {"a", "b", "c", "d"}) {
    ASSERT_NE(s.admit(name, Standing::kSilent, name[0] % 2 ? "10.0.0.1" : "10.0.0.2"), nullptr);
  }
  EXPECT_TRUE(s.evicted.empty());
  ASSERT_NE(s.admit("e", Standing::kSilent, "10.0.0.3"), nullptr);
  ASSERT_NE(s.admit("f", Standing::kSilent, "10.0.0.3"), nullptr);
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.share.size(), 4);
}

// A connection that has had its chance goes before one that has not spoken
// yet, and only a newcomer that authenticates at once displaces one that
// does (a client that sent AUTH right away).
TEST(UnauthenticatedShareTest, SpentGoFirstAndAuthenticatingOnesLast) {
  Share s;
  const auto auth = s.admit("auth", Standing::kAuthenticating, "10.0.0.1");
  s.admit("first", Standing::kSilent, "10.0.0.2");
  const auto answered = s.admit("answered", Standing::kSilent, "10.0.0.3");
  s.admit("silent", Standing::kSilent, "10.0.0.4");
  s.share.spent(answered);
  ASSERT_NE(s.admit("x", Standing::kSilent, "10.0.0.5"), nullptr);
  ASSERT_NE(s.admit("y", Standing::kSilent, "10.0.0.6"), nullptr);
  ASSERT_NE(s.admit("z", Standing::kSilent, "10.0.0.7"), nullptr);
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"answered", "first", "silent"}));
  // Now: auth, x, y, z. Silent newcomers go on displacing silent members.
  s.evicted.clear();
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(s.admit("w", Standing::kSilent, "10.0.1." + std::to_string(i)), nullptr);
  }
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"x", "y", "z"}));
  // One whose first request is not AUTH displaces no silent member...
  EXPECT_EQ(s.admit("ping", Standing::kSpent, "10.0.2.1"), nullptr);
  // ...and an authenticating newcomer displaces the worst first.
  s.evicted.clear();
  for (int i = 0; i < 4; ++i) {
    ASSERT_NE(
        s.admit("a" + std::to_string(i), Standing::kAuthenticating, "10.0.3." + std::to_string(i)),
        nullptr);
  }
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"w", "w", "w", "auth"}));
  (void)auth;
}

TEST(UnauthenticatedShareTest, ASilentNewcomerIsRefusedWhenAllWaitingAuthenticate) {
  Share s;
  std::vector<UnauthenticatedShare::Handle> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(s.admit("r", Standing::kAuthenticating, "10.0.0." + std::to_string(i)));
  }
  EXPECT_EQ(s.admit("late", Standing::kSilent, "10.0.0.9"), nullptr);
  EXPECT_TRUE(s.evicted.empty());
  // Once one has been answered without authenticating, it makes room.
  s.share.spent(held[2]);
  EXPECT_NE(s.admit("late", Standing::kSilent, "10.0.0.9"), nullptr);
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"r"}));
}

// One address holds at most half the share: its newcomers displace its own
// members, never another address's, though slots are free.
TEST(UnauthenticatedShareTest, OneAddressHoldsAtMostHalfTheShare) {
  Share s;
  const auto other = s.admit("other", Standing::kSilent, "192.0.2.7", 6);
  for (int i = 0; i < 10; ++i) {
    ASSERT_NE(s.admit("attack" + std::to_string(i), Standing::kSilent, "198.51.100.1", 6), nullptr);
  }
  EXPECT_EQ(s.share.size(), 4);  // "other" and three of the attacker's
  EXPECT_EQ(s.evicted.size(), 7u);
  for (const auto& name : s.evicted) EXPECT_EQ(name.rfind("attack", 0), 0u) << name;
  // Authenticated, a member leaves and its slot is free.
  s.share.leave(other);
  EXPECT_EQ(s.share.size(), 3);
}

// A silent member is looked at again before it is displaced: one whose
// first request has arrived since is judged by it.
TEST(UnauthenticatedShareTest, ASilentMemberIsLookedAtAgainBeforeItIsDisplaced) {
  Share s;
  Standing first_now = Standing::kSilent;
  Standing second_now = Standing::kSilent;
  const auto look = [](Standing& now) { return [&now] { return now; }; };
  const auto evict = [&s](const std::string& name) {
    return [&s, name] { s.evicted.push_back(name); };
  };
  for (const auto& [name, now] : {std::pair<std::string, Standing*>{"first", &first_now},
                                  std::pair<std::string, Standing*>{"second", &second_now}}) {
    ASSERT_NE(s.share.admit("10.0.0." + name, Standing::kSilent, 2, evict(name), look(*now)).member,
              nullptr);
  }
  // "first" has sent AUTH since, "second" a PING: "second" goes.
  first_now = Standing::kAuthenticating;
  second_now = Standing::kSpent;
  auto admission = s.share.admit("10.0.0.9", Standing::kSilent, 2, evict("third"));
  ASSERT_NE(admission.member, nullptr);
  admission.evict();
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"second"}));
  // "first" authenticates now: silent newcomers displace the others, never it.
  for (const char* name : {"fourth", "fifth"}) {
    auto next = s.share.admit(std::string("10.0.1.") + name, Standing::kSilent, 2, evict(name));
    ASSERT_NE(next.member, nullptr);
    next.evict();
  }
  EXPECT_EQ(s.evicted, (std::vector<std::string>{"second", "third", "fourth"}));
}

TEST(UnauthenticatedShareTest, ALeftMemberIsNeitherSpentNorDisplaced) {
  Share s;
  const auto a = s.admit("a", Standing::kSilent, "10.0.0.1", 1);
  s.share.leave(a);
  s.share.spent(a);
  s.share.leave(a);
  EXPECT_EQ(s.share.size(), 0);
  EXPECT_NE(s.admit("b", Standing::kSilent, "10.0.0.1", 1), nullptr);
  EXPECT_TRUE(s.evicted.empty());
}

}  // namespace
}  // namespace snowid::server
