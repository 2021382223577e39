// The checks behind `snowid check`, fed from strings: findings, sources,
// chunking, the audit log format (torn records, layouts), and the sort.
#include "id_checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "audit_format.h"
#include "time_text.h"

namespace snowid::check {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kNow{1'800'000'000'000};  // 2027-01-15

Layout twitter() { return *preset("twitter"); }

Id id_at(const Layout& layout, milliseconds time, std::uint64_t datacenter, std::uint64_t worker,
         std::uint64_t sequence) {
  return *compose(layout, IdFields{time, datacenter, worker, sequence});
}

CheckOptions options_for(const Layout& layout) {
  CheckOptions options;
  options.layout = layout;
  options.now = kNow;
  return options;
}

std::string lines(const std::vector<Id>& ids) {
  std::string out;
  for (Id id : ids) out += std::to_string(id) + "\n";
  return out;
}

std::string record(const Layout& layout, Id first, Id last, std::uint64_t incarnation = 1) {
  const IdFields fields = *decode(layout, first);
  std::string out;
  audit::append_record(out, {incarnation, fields.datacenter, fields.worker, first, last});
  return out;
}

// Feeds each input whole; fails the test on a feed error.
CheckReport check(const Layout& layout, const std::vector<std::string>& inputs,
                  const std::vector<std::string>& audits = {}) {
  IdChecker checker(options_for(layout));
  for (std::size_t i = 0; i < audits.size(); ++i) {
    checker.begin_audit("audit" + std::to_string(i));
    EXPECT_TRUE(checker.feed(audits[i]).ok());
    EXPECT_TRUE(checker.end_input().ok());
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    checker.begin_ids("in" + std::to_string(i));
    Status fed = checker.feed(inputs[i]);
    EXPECT_TRUE(fed.ok()) << fed.error().message;
    Status ended = checker.end_input();
    EXPECT_TRUE(ended.ok()) << ended.error().message;
  }
  return checker.finish();
}

// The error of feeding `text` as an input of IDs (or an audit log).
std::string error_of(const std::string& text, bool audit = false, Layout layout = twitter()) {
  IdChecker checker(options_for(layout));
  if (audit) {
    checker.begin_audit("log");
  } else {
    checker.begin_ids("in");
  }
  Status s = checker.feed(text);
  if (s.ok()) s = checker.end_input();
  return s.ok() ? "" : s.error().message;
}

std::vector<Id> run_of(const Layout& layout, std::uint64_t worker, int n, milliseconds at = kNow) {
  std::vector<Id> ids;
  for (int i = 0; i < n; ++i) {
    ids.push_back(id_at(layout, at, 0, worker, static_cast<std::uint64_t>(i)));
  }
  return ids;
}

TEST(IdChecker, CleanInputPasses) {
  const auto ids = run_of(twitter(), 3, 1000);
  const CheckReport r = check(twitter(), {lines(ids)});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.ids, 1000u);
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].worker, 3u);
  EXPECT_EQ(r.nodes[0].ids, 1000u);
  EXPECT_EQ(r.nodes[0].first, kNow);
}

TEST(IdChecker, FindsADuplicateAcrossInputsButNoOrderViolation) {
  const auto ids = run_of(twitter(), 0, 10);
  const CheckReport r = check(twitter(), {lines(ids), lines({ids[4]})});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.duplicated_ids, 1u);
  ASSERT_EQ(r.duplicate_examples.size(), 1u);
  EXPECT_EQ(r.duplicate_examples[0].id, ids[4]);
  EXPECT_EQ(r.duplicate_examples[0].occurrences, 2u);
  EXPECT_EQ(r.order_violations, 0u);
}

TEST(IdChecker, FindsAnOrderViolationWithItsLine) {
  auto ids = run_of(twitter(), 0, 10);
  std::swap(ids[6], ids[7]);
  const CheckReport r = check(twitter(), {lines(ids)});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.duplicates, 0u);
  EXPECT_EQ(r.order_violations, 1u);
  ASSERT_EQ(r.order_examples.size(), 1u);
  EXPECT_EQ(r.order_examples[0].where.line, 8u);
  EXPECT_EQ(r.order_examples[0].where.input, "in0");
  EXPECT_EQ(r.order_examples[0].id, ids[7]);
  EXPECT_EQ(r.order_examples[0].previous, ids[6]);
}

TEST(IdChecker, NamedSourcesInterleaveAndAreOrderedEachOnItsOwn) {
  const auto a = run_of(twitter(), 1, 3);
  const auto b = run_of(twitter(), 2, 3);
  // Interleaved lines of two clients: each increases, the stream does not.
  std::string text = "# two clients\n\n";
  for (int i = 0; i < 3; ++i) {
    text += "client-b\t" + std::to_string(b[static_cast<std::size_t>(i)]) + "\r\n";
    text += "client-a\t" + std::to_string(a[static_cast<std::size_t>(i)]) + "\n";
  }
  CheckReport r = check(twitter(), {text});
  EXPECT_TRUE(r.ok());
  ASSERT_EQ(r.sources.size(), 2u);
  EXPECT_EQ(r.sources[0].name, "client-b");
  EXPECT_EQ(r.sources[1].ids, 3u);
  EXPECT_EQ(r.nodes.size(), 2u);

  // The same name in another input is the same source: going back fails.
  r = check(twitter(), {text, "client-a\t" + std::to_string(a[0]) + "\n"});
  EXPECT_EQ(r.order_violations, 1u);
  EXPECT_EQ(r.order_examples.at(0).source, "client-a");
}

TEST(IdChecker, ChunkBoundariesDoNotMatter) {
  auto ids = run_of(twitter(), 0, 300);
  ids.push_back(ids[10]);
  std::string text = lines(ids) + "name\t" + std::to_string(ids[20]);  // no final '\n'
  const CheckReport whole = check(twitter(), {text});
  for (std::size_t chunk : {1u, 2u, 7u, 19u, 20u, 21u, 1000u}) {
    IdChecker checker(options_for(twitter()));
    checker.begin_ids("in0");
    for (std::size_t at = 0; at < text.size(); at += chunk) {
      ASSERT_TRUE(checker.feed(std::string_view(text).substr(at, chunk)).ok());
    }
    ASSERT_TRUE(checker.end_input().ok());
    const CheckReport r = checker.finish();
    EXPECT_EQ(r.ids, whole.ids) << chunk;
    EXPECT_EQ(r.ids, 302u) << chunk;
    EXPECT_EQ(r.duplicates, 2u) << chunk;
    EXPECT_EQ(r.order_violations, whole.order_violations) << chunk;
  }
}

// IDs of every length, fed in chunks that cut them anywhere: the parser
// reads eight digits at a time where it can. Audit records of each exact
// value prove every ID was read exactly.
TEST(IdChecker, ParsesIdsOfEveryLength) {
  const Layout layout = twitter();
  std::vector<Id> ids;
  for (Id id = 7;; id = id * 10 + 3) {  // 1 to 19 digits; the 20th would overflow
    ids.push_back(id);
    if (ids.size() == 19) break;
  }
  ids.push_back(std::numeric_limits<Id>::max());
  std::string log;
  for (Id id : ids) log += record(layout, id, id);
  const std::string text = lines(ids);
  for (std::size_t chunk : {1u, 3u, 7u, 8u, 9u, 4096u}) {
    IdChecker checker(options_for(layout));
    checker.begin_audit("log");
    ASSERT_TRUE(checker.feed(log).ok());
    ASSERT_TRUE(checker.end_input().ok());
    checker.begin_ids("in");
    for (std::size_t at = 0; at < text.size(); at += chunk) {
      ASSERT_TRUE(checker.feed(std::string_view(text).substr(at, chunk)).ok()) << chunk;
    }
    ASSERT_TRUE(checker.end_input().ok());
    const CheckReport r = checker.finish();
    EXPECT_EQ(r.ids, 20u) << chunk;
    EXPECT_EQ(r.order_violations, 0u) << chunk;
    EXPECT_EQ(r.audit.missing, 0u) << chunk;
  }
  for (const char* bad : {"9223372036854775808\n", "12345678a\n", "1234567/\n", "12345678:\n",
                          "123456789012345678901\n", "00000000000000000001\n"}) {
    EXPECT_NE(error_of(bad), "") << bad;
  }
  EXPECT_EQ(error_of("0000000000000000001\n"), "");  // 19 digits
}

TEST(IdChecker, FutureIdsBeyondTheDrift) {
  const Layout layout = twitter();
  const Id now = id_at(layout, kNow, 0, 0, 0);
  const Id within = id_at(layout, kNow + milliseconds{1000}, 0, 0, 0);
  const Id beyond = id_at(layout, kNow + milliseconds{1001}, 0, 0, 0);
  CheckReport r = check(layout, {lines({now, within})});
  EXPECT_TRUE(r.ok());
  r = check(layout, {lines({now, within, beyond})});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.future, 1u);
  ASSERT_EQ(r.future_examples.size(), 1u);
  EXPECT_EQ(r.future_examples[0].id, beyond);
  EXPECT_EQ(r.future_examples[0].where.line, 3u);
}

// --now takes any time parse_time reads; the largest once made now +
// max_drift overflow, flagging every ID as future (found by fuzz_check).
TEST(IdChecker, FutureIdsAtTheEndsOfTime) {
  const Layout layout = twitter();
  const Id id = id_at(layout, kNow, 0, 0, 0);
  CheckOptions options = options_for(layout);
  options.now = milliseconds::max();
  options.max_drift = milliseconds{366LL * 24 * 3'600'000};
  IdChecker late(options);
  late.begin_ids("in");
  ASSERT_TRUE(late.feed(lines({id})).ok());
  ASSERT_TRUE(late.end_input().ok());
  EXPECT_EQ(late.finish().future, 0u);

  options.now = *parse_time("0000-01-01");
  IdChecker early(options);
  early.begin_ids("in");
  ASSERT_TRUE(early.feed(lines({id})).ok());
  ASSERT_TRUE(early.end_input().ok());
  EXPECT_EQ(early.finish().future, 1u);
}

TEST(IdChecker, BadLinesNameTheInputAndLine) {
  EXPECT_NE(error_of("1\n2\nthree\n").find("in:3: 'three' is not an ID"), std::string::npos);
  EXPECT_NE(error_of("1\n-5\n").find("in:2:"), std::string::npos);
  EXPECT_NE(error_of("9223372036854775808\n").find("2^63-1"), std::string::npos);
  EXPECT_NE(error_of("\t5\n").find("empty source name"), std::string::npos);
  EXPECT_NE(error_of("1 \n").find("in:1:"), std::string::npos);
  EXPECT_NE(error_of(std::string(70000, '1')).find("longer than 64 KiB"), std::string::npos);
  // An ID with bits above a 53-bit layout.
  EXPECT_NE(error_of("9007199254740992\n", false, *preset("js-safe")).find("bits above"),
            std::string::npos);
  EXPECT_EQ(error_of("# only a comment\n\n"), "");
}

TEST(IdChecker, AuditRecordsCoverExactlyTheirBlocks) {
  const Layout layout = twitter();
  const auto ids = run_of(layout, 5, 100);
  const std::string log = audit::header(7, kNow, 42, 0, 5, layout) +
                          record(layout, ids[0], ids[49], 7) + record(layout, ids[50], ids[98], 8);
  CheckReport r = check(layout, {lines(std::vector<Id>(ids.begin(), ids.end() - 1))}, {log});
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.audited);
  EXPECT_EQ(r.audit.records, 2u);
  EXPECT_EQ(r.audit.incarnations, 2u);
  EXPECT_EQ(r.audit.missing, 0u);

  r = check(layout, {lines(ids)}, {log});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.audit.missing, 1u);
  EXPECT_EQ(r.audit.missing_examples, std::vector<Id>{ids[99]});
}

// Sonyflake puts the sequence above the node: a block of node 1 spans node
// 2's IDs numerically, yet must not cover them.
TEST(IdChecker, AuditCoverageKeepsNodesApartWhenTheSequenceIsHigh) {
  const Layout layout = *preset("sonyflake");
  const milliseconds at{1'700'000'000'000};
  const Id a0 = id_at(layout, at, 0, 1, 0), a9 = id_at(layout, at, 0, 1, 9);
  const Id b5 = id_at(layout, at, 0, 2, 5);
  ASSERT_TRUE(a0 < b5 && b5 < a9);
  const std::string log = record(layout, a0, a9);
  CheckReport r = check(layout, {lines({a0, id_at(layout, at, 0, 1, 4), a9})}, {log});
  EXPECT_TRUE(r.ok());
  r = check(layout, {lines({b5})}, {log});
  EXPECT_EQ(r.audit.missing, 1u);
  EXPECT_EQ(r.audit.missing_examples.at(0), b5);
  // Duplicates are found in the rearranged order too.
  r = check(layout, {lines({a0, b5}), lines({b5})});
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(r.duplicate_examples.at(0).id, b5);
}

TEST(IdChecker, OverlappingAuditRecordsMeanAnIdIssuedTwice) {
  const Layout layout = twitter();
  const auto ids = run_of(layout, 0, 10);
  const CheckReport r = check(layout, {lines(ids)},
                              {record(layout, ids[0], ids[5]) + record(layout, ids[5], ids[9])});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.audit.overlaps, 1u);
  EXPECT_EQ(r.audit.missing, 0u);
}

TEST(IdChecker, TornAuditRecordsAreDroppedOthersAreErrors) {
  const Layout layout = twitter();
  const auto ids = run_of(layout, 0, 10);
  const std::string good = record(layout, ids[0], ids[4]);
  const std::string cut = record(layout, ids[8], ids[9]).substr(0, 30);
  // A torn line above a marker, and an unterminated last line: dropped.
  const std::string log = good + cut + "\n" + std::string(audit::kTornMarker) + "\n" +
                          record(layout, ids[5], ids[7]) + cut;
  const CheckReport r = check(layout, {lines({ids[0], ids[4], ids[6]})}, {log});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.audit.torn_records, 2u);
  EXPECT_EQ(r.audit.records, 2u);
  // A whole record above a marker was not acknowledged either.
  const CheckReport dropped =
      check(layout, {lines({ids[0]})}, {good + std::string(audit::kTornMarker) + "\n"});
  EXPECT_EQ(dropped.audit.missing, 1u);
  // A bad line without a marker is bad input, wherever it is.
  EXPECT_NE(error_of(good + cut + "\n" + good, true).find("log:2: not an audit record"),
            std::string::npos);
  EXPECT_NE(error_of(good + cut + "\n", true).find("log:2:"), std::string::npos);
}

TEST(IdChecker, AuditLogOfAnotherLayoutIsRefused) {
  const Layout layout = twitter();
  const std::string log = audit::header(1, kNow, 1, 0, 0, *preset("discord"));
  EXPECT_NE(error_of(log, true, layout).find("written with layout"), std::string::npos);
  EXPECT_EQ(error_of(audit::header(1, kNow, 1, 0, 0, layout), true, layout), "");
  // A record whose IDs do not decode to its node: the layout is wrong.
  const Id id = id_at(layout, kNow, 1, 2, 0);
  std::string wrong;
  audit::append_record(wrong, {1, 2, 1, id, id});
  EXPECT_NE(error_of(wrong, true, layout).find("does not decode to node 2/1"), std::string::npos);
}

TEST(AuditFormat, RecordsRoundTrip) {
  std::string line;
  audit::append_record(line, {0x3f2a9c0d1e5b7a61, 3, 17, 910499571847892992, 910499571847893000});
  EXPECT_EQ(line, "3f2a9c0d1e5b7a61 3/17 910499571847892992 910499571847893000\n");
  line.pop_back();
  auto parsed = audit::parse_record(line);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->incarnation, 0x3f2a9c0d1e5b7a61u);
  EXPECT_EQ(parsed->worker, 17u);
  EXPECT_EQ(parsed->last, 910499571847893000);
  for (const char* bad : {"3f2a9c0d1e5b7a61 3/17 5", "3f2a 3/17 5 6", "3f2a9c0d1e5b7a61 317 5 6",
                          "3f2a9c0d1e5b7a61 3/17 6 5", "3f2a9c0d1e5b7a61 3/17  5 6",
                          "3f2a9c0d1e5b7a61 3/17 5 6 7", "zz2a9c0d1e5b7a61 3/17 5 6"}) {
    EXPECT_FALSE(audit::parse_record(bad).ok()) << bad;
  }
  EXPECT_EQ(audit::header_layout("# a comment"), std::nullopt);
}

TEST(SortKeys, AgreesWithStdSort) {
  std::mt19937_64 random(42);
  for (std::size_t n : {0u, 1u, 100u, 5000u, 300000u}) {
    std::vector<std::uint64_t> keys(n);
    // Snowflake-like: the high bytes mostly shared, so passes are skipped.
    for (auto& k : keys) k = (std::uint64_t{0x1d} << 56) | (random() & 0xffffffffffu);
    if (n > 10) keys[n / 2] = keys[1];
    auto expected = keys;
    std::sort(expected.begin(), expected.end());
    sort_keys(keys);
    EXPECT_EQ(keys, expected) << n;
  }
  // Low bits all the same (as IDs of one sequence number): they are skipped.
  std::vector<std::uint64_t> aligned(20000);
  for (auto& k : aligned) k = (random() & 0xffffff) << 12 | 0x5;
  auto expected_aligned = aligned;
  std::sort(expected_aligned.begin(), expected_aligned.end());
  sort_keys(aligned);
  EXPECT_EQ(aligned, expected_aligned);
  std::vector<std::uint64_t> full(100000);
  for (auto& k : full) k = random();  // all 64 bits
  auto expected = full;
  std::sort(expected.begin(), expected.end());
  sort_keys(full);
  EXPECT_EQ(full, expected);
}

}  // namespace
}  // namespace snowid::check
