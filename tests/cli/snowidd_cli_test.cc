// The real snowidd's command line and environment, as an operator meets
// them: --version, SNOWID_ variables (and Kubernetes' own beside them).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "server_process.h"
#include "subprocess.h"

namespace snowid {
namespace {

using test::ProcessResult;
using test::run_process;

// --version prints CMake's project version and exits 0 before reading any
// configuration (a bad option value after it does not matter).
TEST(SnowiddCli, VersionIsTheProjectVersion) {
  for (const auto& args :
       {std::vector<std::string>{SNOWIDD_PATH, "--version"},
        std::vector<std::string>{SNOWIDD_PATH, "--version", "--worker-id", "32"}}) {
    const ProcessResult r = run_process(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "snowid " SNOWID_PROJECT_VERSION "\n");
    EXPECT_EQ(r.err, "");
  }
}

}  // namespace
}  // namespace snowid
