// The check every multi-client test ends with: each source's IDs strictly
// increase, and no ID appears twice across all sources.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "snowid/decode.h"

namespace snowid::test {

// "" if the IDs pass; otherwise what is wrong, for the test's failure message.
inline std::string check_unique_and_increasing(const std::vector<std::vector<Id>>& sources) {
  std::vector<Id> all;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const auto& ids = sources[s];
    const auto bad = std::adjacent_find(ids.begin(), ids.end(), std::greater_equal<Id>());
    if (bad != ids.end()) {
      return "source " + std::to_string(s) + " is not strictly increasing at ID " +
             std::to_string(*bad);
    }
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  const auto repeat = std::adjacent_find(all.begin(), all.end());
  return repeat == all.end() ? "" : "duplicate ID " + std::to_string(*repeat);
}

}  // namespace snowid::test
