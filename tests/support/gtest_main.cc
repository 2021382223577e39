// main() of the test programs that ctest may run whole, as one test (add_test
// with a --gtest_filter rather than gtest_discover_tests): gtest_main's, but
// a run in which tests were skipped and none failed exits 77, which those
// ctest tests take as "skipped" (SKIP_RETURN_CODE 77), so that a program
// whose tests all skipped (its server not installed) is not reported as
// passed. A run with a failure exits 1 as before.
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (RUN_ALL_TESTS() != 0) return 1;
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (run.skipped_test_count() == 0) return 0;
  std::printf("%d of %d tests skipped: exit 77, which ctest reports as skipped\n",
              run.skipped_test_count(), run.test_to_run_count());
  return 77;
}
