// The persisted high-water mark: crash and restart with the clock behind it
// under each policy, damaged files, locking and write failures.
#include "state_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "snowid/decode.h"
#include "snowid/generator.h"
#include "subprocess.h"
#include "time_text.h"

namespace snowid {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kStart{1'790'000'000'000};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class StateFileTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  ManualClock clock{kStart};
  std::string path = dir.file("snowid.state");

  GeneratorOptions options(ClockPolicy policy) {
    GeneratorOptions o;
    o.clock = &clock;
    o.clock_policy = policy;
    o.state_file = path;
    o.reserve_ahead = milliseconds{2000};
    return o;
  }
  // Issues `count` IDs, adding them to `seen`; fails the test on a repeat.
  void issue(Generator& g, int count, std::set<Id>& seen) {
    for (int i = 0; i < count; ++i) {
      auto id = g.next();
      ASSERT_TRUE(id.ok()) << id.error().message;
      ASSERT_TRUE(seen.insert(*id).second) << "repeated ID " << *id;
      if (i % 1000 == 999) clock.advance(milliseconds{1});
    }
  }
  std::optional<milliseconds> mark() {
    std::istringstream lines(read_file(path));
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind("high_water_unix_ms=", 0) == 0) return milliseconds{std::stoll(line.substr(19))};
    }
    return std::nullopt;
  }
};

TEST_F(StateFileTest, FreshStartWritesAMarkAhead) {
  auto g = Generator::create(options(ClockPolicy::kReject));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(mark(), kStart + milliseconds{2000});
  EXPECT_EQ((*g)->stats().high_water, kStart + milliseconds{2000});
}

// A crash leaves the mark reserve_ahead in front; the clock is then set back.
TEST_F(StateFileTest, CrashAndRestartWithClockBehindTheMark) {
  struct Case {
    ClockPolicy policy;
    milliseconds max_drift;
    bool starts;
  };
  for (const Case& c : {Case{ClockPolicy::kReject, milliseconds{1000}, false},
                        Case{ClockPolicy::kWait, milliseconds{1000}, true},
                        Case{ClockPolicy::kMonotonic, milliseconds{1000}, false},
                        Case{ClockPolicy::kMonotonic, milliseconds{10'000}, true}}) {
    std::filesystem::remove(path);
    clock.set(kStart);
    std::set<Id> seen;
    {
      auto first = Generator::create(options(c.policy));
      ASSERT_TRUE(first.ok());
      issue(**first, 5000, seen);
      // Destroyed without checkpoint(): as after kill -9.
    }
    const Id highest = *seen.rbegin();
    clock.set(kStart - milliseconds{5000});
    auto o = options(c.policy);
    o.max_drift = c.max_drift;
    o.max_start_wait = milliseconds{10'000};
    auto second = Generator::create(o);
    ASSERT_EQ(second.ok(), c.starts) << clock_policy_name(c.policy);
    if (!second.ok()) {
      EXPECT_EQ(second.error().code, ErrorCode::kClockBehind);
      EXPECT_NE(second.error().message.find("ms behind the high-water mark"), std::string::npos)
          << second.error().message;
      continue;
    }
    auto id = (*second)->next();
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_GT(*id, highest);
    EXPECT_GT(decode(Layout{}, *id)->timestamp, kStart + milliseconds{2000});
    issue(**second, 3000, seen);
  }
}

// With the default options, a crash followed by an immediate restart on the
// same clock starts at once (the mark is at most reserve_ahead < max_drift ahead).
TEST_F(StateFileTest, DefaultOptionsRestartRightAfterACrash) {
  GeneratorOptions defaults;
  defaults.clock = &clock;
  defaults.state_file = path;
  ASSERT_LT(defaults.reserve_ahead, defaults.max_drift);
  std::set<Id> seen;
  {
    auto first = Generator::create(defaults);
    ASSERT_TRUE(first.ok());
    issue(**first, 2000, seen);
  }
  auto second = Generator::create(defaults);
  ASSERT_TRUE(second.ok()) << second.error().message;
  const Id id = *(*second)->next();
  EXPECT_GT(id, *seen.rbegin());
}

// /readyz must not promise what a request would refuse: after a restart
// behind the mark, readiness() is OK exactly when the next ID is served,
// millisecond by millisecond as the clock nears the mark, for each policy
// and for a time unit longer than one millisecond.
TEST_F(StateFileTest, ReadyExactlyWhenTheNextIdIsServedNearTheMark) {
  for (const milliseconds unit : {milliseconds{1}, milliseconds{4}}) {
    for (const ClockPolicy policy :
         {ClockPolicy::kWait, ClockPolicy::kMonotonic, ClockPolicy::kReject}) {
      std::filesystem::remove(path);
      clock.set(kStart);
      auto o = options(policy);
      o.layout.time_unit = unit;
      o.max_wait = milliseconds{5};
      o.max_drift = milliseconds{9};
      o.max_start_wait = milliseconds{60'000};
      o.defer_start_wait = true;
      { ASSERT_TRUE(Generator::create(o).ok()); }  // a crash leaves the mark ahead
      const std::string crashed = read_file(path);
      const milliseconds mark_at_crash = *mark();
      for (long behind = 16; behind >= -2; --behind) {
        const std::string label = fmt::format("unit {} ms, {} policy, clock {} ms behind the mark",
                                              unit.count(), clock_policy_name(policy), behind);
        { std::ofstream(path, std::ios::trunc) << crashed; }
        clock.set(mark_at_crash - milliseconds{behind});
        auto g = Generator::create(o);
        if (!g.ok()) continue;  // refused to start: nothing to be ready for
        const bool ready = (*g)->readiness().ok();
        auto id = (*g)->next();
        EXPECT_EQ(ready, id.ok()) << label << ": "
                                  << (id.ok() ? std::string{"issued"} : id.error().message);
      }
    }
  }
}

TEST_F(StateFileTest, CleanStopNeedsNoGap) {
  std::set<Id> seen;
  {
    auto g = Generator::create(options(ClockPolicy::kReject));
    issue(**g, 100, seen);
    ASSERT_TRUE((*g)->checkpoint().ok());
  }
  EXPECT_EQ(mark(), kStart);
  clock.advance(milliseconds{1});
  auto g = Generator::create(options(ClockPolicy::kReject));
  ASSERT_TRUE(g.ok()) << g.error().message;
  issue(**g, 100, seen);
}

TEST_F(StateFileTest, MarkAlwaysCoversIssuedIds) {
  auto o = options(ClockPolicy::kMonotonic);
  o.reserve_ahead = milliseconds{50};
  auto g = Generator::create(o);
  for (int i = 0; i < 2000; ++i) {
    const Id id = *(*g)->next();
    ASSERT_LE(decode(Layout{}, id)->timestamp, *mark());
    clock.advance(milliseconds{1});
  }
  // extend_reservation() keeps the mark ahead so next() need not write.
  ASSERT_TRUE((*g)->extend_reservation().ok());
  EXPECT_GE(*mark(), clock.now() + milliseconds{25});
}

TEST_F(StateFileTest, SecondUserOfTheFileIsRefused) {
  auto first = Generator::create(options(ClockPolicy::kReject));
  ASSERT_TRUE(first.ok());
  auto second = Generator::create(options(ClockPolicy::kReject));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kStateLocked);
  EXPECT_NE(second.error().message.find("in use by another process"), std::string::npos);
}

TEST_F(StateFileTest, DamagedFileIsAnErrorAndIsLeftAlone) {
  for (const std::string& damage :
       {std::string("garbage\n"), std::string(""),
        std::string("version=1\nhigh_water_unix_ms=5\nchecksum=0000000000000000\n")}) {
    { std::ofstream(path) << damage; }
    auto g = Generator::create(options(ClockPolicy::kMonotonic));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().code, ErrorCode::kStateFile);
    EXPECT_EQ(read_file(path), damage);
  }
}

TEST_F(StateFileTest, EditedMarkFailsTheChecksum) {
  { auto g = Generator::create(options(ClockPolicy::kReject)); }
  std::string content = read_file(path);
  const auto at = content.find("high_water_unix_ms=") + 19;
  content[at] = content[at] == '1' ? '2' : '1';
  { std::ofstream(path) << content; }
  auto g = Generator::create(options(ClockPolicy::kReject));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("checksum"), std::string::npos);
}

// A state file has one form. Content with a valid checksum but another
// shape (a second mark line, a repeated key, a comment or blank line added,
// bytes after the checksum) was made or edited by hand and is refused as
// damaged, whichever of its marks a lax reader would have taken.
TEST_F(StateFileTest, OnlyTheOneFormIsAcceptedEvenWithAValidChecksum) {
  const std::string header = "# snowid state file: written by snowid, do not edit\n";
  const std::string layout = fmt::format("layout={}\n", describe(Layout{}));
  const auto checksummed = [](const std::string& covered) {
    std::uint64_t hash = 14695981039346656037ULL;
    for (char c : covered) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
    return covered + fmt::format("checksum={:016x}\n", hash);
  };
  const std::string high = "high_water_unix_ms=1789999999000\n";
  const std::string low = "high_water_unix_ms=1789999995000\n";
  const std::string canonical = header + "version=1\n" + layout + high;
  const std::vector<std::string> forms = {
      checksummed(header + "version=1\n" + layout + high + low),  // two mark lines
      checksummed(header + "version=1\n" + layout + low + high),
      checksummed(header + "version=1\nversion=1\n" + layout + high),  // a repeated key
      checksummed(header + "version=1\n" + layout + layout + high),
      checksummed(header + "# a comment\nversion=1\n" + layout + high),
      checksummed(header + "version=1\n\n" + layout + high),              // a blank line
      checksummed(header + "version=1\n" + layout + high + "extra=1\n"),  // an unknown key
      checksummed(header + layout + "version=1\n" + high),                // another order
      checksummed("version=1\n" + layout + high),                         // no header
      checksummed(canonical) + "\n",                                      // trailing bytes
      checksummed(canonical) + checksummed(canonical),
  };
  for (const std::string& form : forms) {
    { std::ofstream(path, std::ios::trunc) << form; }
    auto g = Generator::create(options(ClockPolicy::kMonotonic));
    ASSERT_FALSE(g.ok()) << form;
    EXPECT_EQ(g.error().code, ErrorCode::kStateFile);
    EXPECT_NE(g.error().message.find("damaged"), std::string::npos) << g.error().message;
    EXPECT_EQ(read_file(path), form) << "a refused file is left as it was";
  }
  // The one form itself is accepted.
  { std::ofstream(path, std::ios::trunc) << checksummed(canonical); }
  auto g = Generator::create(options(ClockPolicy::kMonotonic));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ((*g)->stats().mark_at_start, milliseconds{1'789'999'999'000});
}

TEST_F(StateFileTest, FileOfAnotherLayoutIsRefused) {
  { auto g = Generator::create(options(ClockPolicy::kReject)); }
  auto o = options(ClockPolicy::kReject);
  o.layout = *preset("discord");
  auto g = Generator::create(o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("layout"), std::string::npos);
}

TEST_F(StateFileTest, UnwritableLocationFailsAtCreate) {
  auto o = options(ClockPolicy::kReject);
  o.state_file = dir.file("missing-dir/snowid.state");
  auto g = Generator::create(o);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kStateFile);
}

// A failed write keeps the old mark in force: IDs stop at the mark rather
// than run past what is on disk.
TEST_F(StateFileTest, WriteFailureStopsIssuingAtTheMark) {
  auto o = options(ClockPolicy::kReject);
  o.state_file = dir.file("sub/snowid.state");
  std::filesystem::create_directory(dir.file("sub"));
  o.reserve_ahead = milliseconds{10};
  auto g = Generator::create(o);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE((*g)->next().ok());
  // Make the rename target a directory so the next write fails.
  std::filesystem::create_directory(dir.file("sub/snowid.state.tmp"));
  clock.advance(milliseconds{50});
  auto id = (*g)->next();
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, ErrorCode::kStateFile);
  EXPECT_EQ((*g)->stats().state_write_failures, 1u);
  std::filesystem::remove(dir.file("sub/snowid.state.tmp"));
  auto again = (*g)->next();
  ASSERT_TRUE(again.ok()) << again.error().message;
}

// Only nothing at the path is a first start: a dangling symbolic link is
// what an unmounted state volume looks like, and it must not be replaced by
// a fresh file.
TEST_F(StateFileTest, DanglingSymlinkIsRefusedNotTakenForAFirstStart) {
  std::filesystem::create_symlink(dir.file("volume/generator.state"), path);
  auto g = Generator::create(options(ClockPolicy::kMonotonic));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code, ErrorCode::kStateFile);
  EXPECT_NE(g.error().message.find("does not exist (an unmounted volume?)"), std::string::npos)
      << g.error().message;
  EXPECT_TRUE(std::filesystem::is_symlink(path));  // left as it was
}

// A link to a file is followed: the file it names holds the mark, and the
// link stays a link.
TEST_F(StateFileTest, SymlinkToAFileIsFollowed) {
  std::filesystem::create_directory(dir.file("volume"));
  const std::string target = dir.file("volume/generator.state");
  {
    auto o = options(ClockPolicy::kMonotonic);
    o.state_file = target;
    ASSERT_TRUE(Generator::create(o).ok());
  }
  std::filesystem::create_symlink(target, path);
  clock.advance(milliseconds{3000});  // past the first generator's mark
  auto g = Generator::create(options(ClockPolicy::kMonotonic));
  ASSERT_TRUE(g.ok()) << g.error().message;
  clock.advance(milliseconds{5000});
  ASSERT_TRUE((*g)->next().ok());
  ASSERT_TRUE((*g)->extend_reservation().ok());
  EXPECT_TRUE(std::filesystem::is_symlink(path));
  EXPECT_NE(read_file(target).find("high_water_unix_ms="), std::string::npos);
}

TEST_F(StateFileTest, DirectoryAndForgedMarksAreNamedAsSuch) {
  std::filesystem::create_directory(path);
  auto g = Generator::create(options(ClockPolicy::kMonotonic));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("is a directory, not a file"), std::string::npos)
      << g.error().message;
  std::filesystem::remove(path);

  // A mark of INT64_MAX with a valid checksum, as a forger would write it.
  const std::string covered = fmt::format(
      "# snowid state file: written by snowid, do not "
      "edit\nversion=1\nlayout={}\n"
      "high_water_unix_ms=9223372036854775807\n",
      describe(Layout{}));
  std::uint64_t hash = 14695981039346656037ULL;
  for (char c : covered) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  std::ofstream(path) << covered << fmt::format("checksum={:016x}\n", hash);
  g = Generator::create(options(ClockPolicy::kMonotonic));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("lies after the year 9999"), std::string::npos)
      << g.error().message;
  EXPECT_EQ(g.error().message.find("-6911"), std::string::npos) << g.error().message;
  EXPECT_EQ(format_time(milliseconds{std::numeric_limits<std::int64_t>::max()}),
            "Unix ms 9223372036854775807 (outside the years 0000 to 9999)");
}

// Removing the lock file, replacing the state file or moving the directory
// under a live generator: it stops issuing at its next check, for good, and
// says why; it never writes over a file it did not write.
TEST_F(StateFileTest, LostOwnershipStopsIssuing) {
  struct Case {
    const char* name;
    std::function<void()> act;
  };
  const std::string sub = dir.file("sub");
  for (const Case& c : {
           Case{"lock removed", [&] { std::filesystem::remove(sub + "/g.state.lock"); }},
           Case{"state replaced",
                [&] {
                  std::filesystem::copy_file(sub + "/g.state", sub + "/copy");
                  std::filesystem::rename(sub + "/copy", sub + "/g.state");
                }},
           Case{"state removed", [&] { std::filesystem::remove(sub + "/g.state"); }},
           Case{"directory moved",
                [&] {
                  std::filesystem::rename(sub, dir.file("moved"));
                  std::filesystem::create_directory(sub);
                }},
       }) {
    std::filesystem::remove_all(sub);
    std::filesystem::remove_all(dir.file("moved"));
    std::filesystem::create_directory(sub);
    auto o = options(ClockPolicy::kMonotonic);
    o.state_file = sub + "/g.state";
    auto g = Generator::create(o);
    ASSERT_TRUE(g.ok()) << c.name << ": " << g.error().message;
    ASSERT_TRUE((*g)->next().ok());
    c.act();
    Status checked = (*g)->extend_reservation();
    ASSERT_FALSE(checked.ok()) << c.name;
    EXPECT_EQ(checked.error().code, ErrorCode::kStateFile);
    auto id = (*g)->next();
    ASSERT_FALSE(id.ok()) << c.name;
    EXPECT_EQ(id.error().code, ErrorCode::kStateFile) << id.error().message;
    clock.advance(milliseconds{10'000});
    EXPECT_FALSE((*g)->next().ok()) << c.name << ": issued again after losing the state";
    Status ready = (*g)->readiness();
    ASSERT_FALSE(ready.ok()) << c.name;
    EXPECT_NE(ready.error().message.find("stops issuing"), std::string::npos)
        << ready.error().message;
  }
}

// With lock_state_directory, the directory itself is locked: removing the
// lock file does not let a second owner in.
TEST_F(StateFileTest, LockedDirectoryKeepsASecondOwnerOutWhateverHappensToTheLockFile) {
  auto o = options(ClockPolicy::kMonotonic);
  o.lock_state_directory = true;
  auto first = Generator::create(o);
  ASSERT_TRUE(first.ok()) << first.error().message;
  std::filesystem::remove(path + ".lock");
  auto second = Generator::create(o);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, ErrorCode::kStateLocked) << second.error().message;
  auto other = o;
  other.state_file = dir.file("other.state");
  EXPECT_FALSE(Generator::create(other).ok()) << "a second state file in a locked directory";
}

// A directory an owner locked is in use for every state file in it: a user
// that does not own its directory (`snowid gen --state-file`) is refused
// there whatever the file's name, while such users share a directory with
// each other, and an owner cannot take a directory one of them is using.
TEST_F(StateFileTest, NoStateFileIsUsedInADirectoryAnOwnerHolds) {
  auto owner_options = options(ClockPolicy::kMonotonic);
  owner_options.lock_state_directory = true;
  auto other = options(ClockPolicy::kMonotonic);
  other.state_file = dir.file("other.state");
  {
    auto owner = Generator::create(owner_options);
    ASSERT_TRUE(owner.ok()) << owner.error().message;
    auto user = Generator::create(other);
    ASSERT_FALSE(user.ok()) << "a second generator beside a live owner";
    EXPECT_EQ(user.error().code, ErrorCode::kStateLocked) << user.error().message;
    EXPECT_NE(user.error().message.find("in use"), std::string::npos) << user.error().message;
  }
  auto user = Generator::create(other);
  ASSERT_TRUE(user.ok()) << user.error().message;
  auto third = options(ClockPolicy::kMonotonic);
  third.state_file = dir.file("third.state");
  EXPECT_TRUE(Generator::create(third).ok()) << "users of one directory exclude each other";
  auto owner = Generator::create(owner_options);
  ASSERT_FALSE(owner.ok());
  EXPECT_EQ(owner.error().code, ErrorCode::kStateLocked) << owner.error().message;
}

// The temporary file's name belongs to the generator: a link planted there
// is replaced, never followed, so no file elsewhere is truncated or written,
// and the state file stays a file of the state directory.
TEST_F(StateFileTest, LinkAtTheTemporaryNameIsNotFollowed) {
  const std::string victim = dir.file("victim");
  std::ofstream(victim) << "not snowid's\n";
  auto o = options(ClockPolicy::kReject);
  o.reserve_ahead = milliseconds{10};
  auto g = Generator::create(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::filesystem::create_symlink(victim, path + ".tmp");
  clock.advance(milliseconds{50});
  auto id = (*g)->next();  // past the mark: a write
  ASSERT_TRUE(id.ok()) << id.error().message;
  EXPECT_EQ(read_file(victim), "not snowid's\n");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_GE(mark(), kStart + milliseconds{50});
  ASSERT_TRUE((*g)->extend_reservation().ok());
}

// The state file as a link into a volume, and the link then pointed at a
// copy (another volume, a restored backup) under a live generator: the path
// no longer leads to the mark it keeps, so it stops issuing; and the
// directory that holds the link stays locked, so a second owner started on
// it is refused rather than issuing beside the first from the copy.
TEST_F(StateFileTest, RepointedStateLinkStopsIssuingAndLetsNoSecondOwnerIn) {
  std::filesystem::create_directory(dir.file("volume1"));
  std::filesystem::create_directory(dir.file("volume2"));
  const std::string first_target = dir.file("volume1/generator.state");
  const std::string second_target = dir.file("volume2/generator.state");
  auto o = options(ClockPolicy::kMonotonic);
  o.lock_state_directory = true;
  {
    auto target_options = o;
    target_options.state_file = first_target;
    ASSERT_TRUE(Generator::create(target_options).ok());
  }
  std::filesystem::create_symlink(first_target, path);
  clock.advance(milliseconds{3000});
  auto first = Generator::create(o);
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE((*first)->next().ok());

  std::filesystem::copy_file(first_target, second_target);
  std::filesystem::remove(path);
  std::filesystem::create_symlink(second_target, path);
  clock.advance(milliseconds{3000});  // past the copied mark: only the lock may refuse

  auto second = Generator::create(o);
  ASSERT_FALSE(second.ok()) << "a second owner of " << path << " issues beside the first";
  EXPECT_EQ(second.error().code, ErrorCode::kStateLocked) << second.error().message;

  Status checked = (*first)->extend_reservation();
  ASSERT_FALSE(checked.ok()) << "the link names another file, yet the generator goes on";
  EXPECT_EQ(checked.error().code, ErrorCode::kStateFile);
  EXPECT_NE(checked.error().message.find("no longer leads"), std::string::npos)
      << checked.error().message;
  EXPECT_FALSE((*first)->next().ok());
  EXPECT_FALSE((*first)->readiness().ok());
}

// A forward glitch of the clock with nothing issued does not move the mark,
// so a restart after it (kill -9, the clock back) starts at once under
// every policy.
TEST_F(StateFileTest, ForwardGlitchWithoutIssuanceLeavesTheMarkAlone) {
  for (ClockPolicy policy : {ClockPolicy::kReject, ClockPolicy::kWait, ClockPolicy::kMonotonic}) {
    std::filesystem::remove(path);
    clock.set(kStart);
    auto o = options(policy);
    o.max_start_wait = milliseconds{100};
    {
      auto g = Generator::create(o);
      ASSERT_TRUE(g.ok());
      ASSERT_TRUE((*g)->next().ok());
      clock.set(kStart + std::chrono::hours{1});  // the glitch: no request meanwhile
      for (int i = 0; i < 10; ++i) ASSERT_TRUE((*g)->extend_reservation().ok());
      clock.set(kStart);
      clock.advance(milliseconds{10});
      ASSERT_TRUE((*g)->extend_reservation().ok());
      EXPECT_LT((*g)->stats().high_water, kStart + milliseconds{3000});
    }  // as after kill -9
    clock.advance(milliseconds{3000});
    auto again = Generator::create(o);
    EXPECT_TRUE(again.ok()) << clock_policy_name(policy) << ": " << again.error().message;
  }
}

// IDs issued during a forward step move the mark with them; the restart
// refuses, unless the operator asks to continue on a logical clock above it.
TEST_F(StateFileTest, IssuedAheadNeedsContinueAboveMark) {
  auto o = options(ClockPolicy::kReject);
  Id last = 0;
  {
    auto g = Generator::create(o);
    ASSERT_TRUE(g.ok());
    clock.set(kStart + std::chrono::hours{1});
    auto id = (*g)->next();
    ASSERT_TRUE(id.ok());
    last = *id;
  }
  clock.set(kStart);
  auto refused = Generator::create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kClockBehind);
  o.continue_above_mark = true;
  auto g = Generator::create(o);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_GE((*g)->stats().logical_clock_lead, std::chrono::hours{1});
  std::set<Id> seen;
  for (int i = 0; i < 20'000; ++i) {
    auto id = (*g)->next();
    ASSERT_TRUE(id.ok()) << id.error().message;
    ASSERT_GT(*id, last);
    last = *id;
    if (i % 1000 == 999) clock.advance(milliseconds{1});
  }
}

}  // namespace
}  // namespace snowid
