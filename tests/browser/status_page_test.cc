// The status page (GET /) in a real browser: headless Chromium loads it from
// a real snowidd with a bearer token, in cluster mode on a real Redis and
// with segment mode on, under load, runs
// its script under the page's Content-Security-Policy, and leaves the DOM
// (--dump-dom) and a screenshot. The page must have drawn every chart from
// its own polls, shown the node's data and written no console message; a
// second load without the token must show the token form and nothing of the
// node, while /v1/info still answers 401.
//
// Label browser: run by scripts/test.sh with the other tests, not under the
// sanitizers (scripts/sanitize.sh), since the browser is not what they check.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <regex>
#include <thread>

#include "chaos.h"
#include "http_checks.h"
#include "png_image.h"
#include "redis_process.h"
#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using namespace std::chrono_literals;
using test::http_get;
using test::HttpReply;

constexpr const char* kToken = "s3cret-Token_1";
constexpr int kWindowWidth = 1280;
constexpr int kWindowHeight = 1000;

// The series color the page draws its first line of each chart in (#1f6fd1).
constexpr test::Rgba kFirstSeries{31, 111, 209, 255};

struct BrowserRun {
  test::ProcessResult process;
  std::string dom;  // after the page's script ran
  std::string png;  // the screenshot file, if one was asked for
};

// Chromium on `url`, given `budget` of virtual time (timers run as fast as
// the page's fetches allow), with a profile of its own in `dir`.
BrowserRun run_chromium(const test::TempDir& dir, const std::string& name, const std::string& url,
                        bool screenshot, std::chrono::milliseconds budget) {
  const std::string chromium = test::find_program("chromium");
  std::vector<std::string> argv{
      chromium,
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-extensions",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--hide-scrollbars",
      "--force-device-scale-factor=1",
      "--user-data-dir=" + dir.file(name + "-profile"),
      "--window-size=" + std::to_string(kWindowWidth) + "," + std::to_string(kWindowHeight),
      "--virtual-time-budget=" + std::to_string(budget.count()),
      "--enable-logging=stderr",
      "--v=0",
      "--dump-dom"};
  const std::string png_path = dir.file(name + ".png");
  if (screenshot) argv.push_back("--screenshot=" + png_path);
  argv.push_back(url);
  BrowserRun run;
  run.process = test::run_process(argv, {{"HOME", dir.path()}}, 40s);
  run.dom = run.process.out;
  if (screenshot) run.png = test::read_file(png_path);
  return run;
}

// Chromium's log lines that carry a page's console messages, uncaught
// exceptions and policy violations ("...:CONSOLE(12)] ...").
std::vector<std::string> console_lines(const std::string& log) {
  std::vector<std::string> out;
  for (const std::string& line : test::split_lines(log)) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Content Security Policy") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

// The attribute `name` of the element whose start tag begins `<tag id="id"`.
std::string attribute(const std::string& dom, const std::string& start, const std::string& name) {
  const auto at = dom.find(start);
  if (at == std::string::npos) return "";
  const std::string tag = dom.substr(at, dom.find('>', at) - at);
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + name + "=\"([^\"]*)\""))) return "";
  return m[1];
}

struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
};

std::optional<Rect> parse_rect(const std::string& text) {
  std::smatch m;
  if (!std::regex_match(text, m, std::regex(R"((\d+),(\d+),(\d+),(\d+))"))) return std::nullopt;
  return Rect{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), std::stoi(m[4])};
}

struct PlotPixels {
  int first_series = 0;  // pixels of the first series' color
  double deviation = 0;  // standard deviation of the luminance
};

// The plot area of a chart (the canvas less its legend and axis labels, as
// drawChart lays them out: 44 px left, 8 px right and top, 30 px bottom).
PlotPixels plot_pixels(const test::PngImage& image, const Rect& canvas) {
  PlotPixels out;
  double sum = 0, squares = 0;
  int n = 0;
  for (int y = canvas.y + 8; y < canvas.y + canvas.height - 30; ++y) {
    for (int x = canvas.x + 44; x < canvas.x + canvas.width - 8; ++x) {
      if (x >= image.width() || y >= image.height()) continue;
      const test::Rgba p = image.at(x, y);
      if (std::abs(p.r - kFirstSeries.r) < 40 && std::abs(p.g - kFirstSeries.g) < 40 &&
          std::abs(p.b - kFirstSeries.b) < 40) {
        ++out.first_series;
      }
      const double luminance = 0.2126 * p.r + 0.7152 * p.g + 0.0722 * p.b;
      sum += luminance;
      squares += luminance * luminance;
      ++n;
    }
  }
  if (n > 0) out.deviation = std::sqrt(std::max(0.0, squares / n - (sum / n) * (sum / n)));
  return out;
}

class StatusPageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(test::find_program("chromium").empty())
        << "chromium is not installed (scripts/install-deps.sh test installs it)";
    ASSERT_TRUE(redis.started()) << redis.why();
    redis.cli({"SET", "snowid:{c}:created", "0"});  // a new cluster: no wait ahead of the clock
    const std::string store = "sqlite://" + dir.file("segments.db");
    const auto created = test::run_process(
        {SNOWID_CLI_PATH, "segment", "create", "order", "--step", "500", "--segment-store", store});
    ASSERT_EQ(created.exit_code, 0) << created.err;
    server = test::start(dir, {"--bearer-token", kToken, "--segment-store", store, "--coordinator",
                               "redis", "--redis-endpoints", redis.endpoint(), "--cluster", "c"});
    ASSERT_TRUE(server->started());
    ASSERT_TRUE(
        test::wait_until([&] { return http_get(server->port(), "/readyz").status == 200; }, 20s))
        << server->log();
    load = std::thread([this] { run_load(); });
  }

  void TearDown() override {
    stop = true;
    if (load.joinable()) load.join();
  }

  // Keeps IDs and segment numbers flowing while the browser polls, one in
  // ten calls without the token (refused), so every chart has data.
  void run_load() {
    test::HttpConnection connection(server->port());
    const std::string authorized = std::string("Authorization: Bearer ") + kToken + "\r\n";
    for (int i = 0; !stop; ++i) {
      const std::string target = i % 3 == 0 ? "/v1/segment/order" : "/v1/ids?count=20";
      const std::string request =
          "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + (i % 10 == 9 ? "" : authorized) + "\r\n";
      if (!connection.send(request) || connection.read().status == 0) return;
      if (i % 50 == 49) std::this_thread::sleep_for(2ms);
    }
  }

  test::TempDir dir;
  test::RedisServer redis;
  std::unique_ptr<test::ServerProcess> server;
  std::atomic<bool> stop{false};
  std::thread load;
};

TEST_F(StatusPageTest, WithTheTokenItDrawsEveryChartAndLogsNothing) {
  const std::string url =
      "http://127.0.0.1:" + std::to_string(server->port()) + "/#token=" + kToken;
  const BrowserRun run = run_chromium(dir, "token", url, true, 9000ms);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_TRUE(console_lines(run.process.err).empty())
      << ::testing::PrintToString(console_lines(run.process.err));

  const std::string body = "<body";
  EXPECT_EQ(attribute(run.dom, body, "data-state"), "ok") << run.dom;
  EXPECT_EQ(attribute(run.dom, body, "data-ok"), "1");
  const std::string samples = attribute(run.dom, body, "data-samples");
  ASSERT_FALSE(samples.empty()) << run.dom;
  EXPECT_GE(std::stoi(samples), 3);
  // The node's facts, its claim, the segment tag's buffers, and never the token.
  EXPECT_NE(run.dom.find("<dt>high-water mark</dt>"), std::string::npos);
  EXPECT_NE(run.dom.find("<dt>coordinator</dt><dd>redis</dd>"), std::string::npos) << run.dom;
  EXPECT_NE(run.dom.find("<dt>claim</dt><dd>held</dd>"), std::string::npos) << run.dom;
  EXPECT_NE(run.dom.find("<dt>reservation − clock</dt>"), std::string::npos);
  EXPECT_NE(run.dom.find("<dt>worker</dt><dd>"), std::string::npos);
  EXPECT_NE(run.dom.find("<td>order</td>"), std::string::npos) << run.dom;
  EXPECT_EQ(run.dom.find(kToken), std::string::npos);

  std::string why;
  const auto image = test::PngImage::decode(run.png, why);
  ASSERT_TRUE(image.has_value()) << why;
  EXPECT_EQ(image->width(), kWindowWidth);
  EXPECT_EQ(image->height(), kWindowHeight);
  for (const std::string chart : {"rate-chart", "latency-chart", "clock-chart"}) {
    const std::string start = "<canvas id=\"" + chart + "\"";
    const std::string points = attribute(run.dom, start, "data-points");
    ASSERT_FALSE(points.empty()) << chart;
    EXPECT_GE(std::stoi(points), 4) << chart;  // two series of two points at least
    const auto rect = parse_rect(attribute(run.dom, start, "data-rect"));
    ASSERT_TRUE(rect.has_value()) << chart;
    ASSERT_LE(rect->x + rect->width, image->width()) << chart;
    ASSERT_LE(rect->y + rect->height, image->height()) << chart;
    const PlotPixels pixels = plot_pixels(*image, *rect);
    // A line across the plot is hundreds of pixels of its color (about 400
    // measured) and spreads the luminance (deviation 25-30); the grid alone
    // has none of the color and a deviation near 5.
    EXPECT_GT(pixels.first_series, 150) << chart;
    EXPECT_GT(pixels.deviation, 12.0) << chart;
  }
}

TEST_F(StatusPageTest, WithoutTheTokenItAsksForItAndShowsNothing) {
  const std::string url = "http://127.0.0.1:" + std::to_string(server->port()) + "/";
  const BrowserRun run = run_chromium(dir, "none", url, false, 3000ms);
  ASSERT_EQ(run.process.exit_code, 0) << run.process.err;
  EXPECT_EQ(attribute(run.dom, "<body", "data-state"), "auth") << run.dom;
  EXPECT_EQ(attribute(run.dom, "<body", "data-ok"), "0");
  EXPECT_EQ(attribute(run.dom, "<form id=\"auth\"", "class"), "") << run.dom;
  EXPECT_NE(run.dom.find("<dl id=\"node-facts\"></dl>"), std::string::npos) << run.dom;
  EXPECT_EQ(run.dom.find("<dt>worker</dt>"), std::string::npos);
  // The page asked, was refused, and the route still refuses.
  EXPECT_GE(
      test::metric(server->port(), "snowid_http_requests_total{route=\"/v1/info\",status=\"401\"}"),
      1);
  test::expect_json_error(http_get(server->port(), "/v1/info"), 401, "bearer token");
}

}  // namespace
}  // namespace snowid
