#pragma once
// What every benchmark reports: the median of its timed rounds.

#include <algorithm>
#include <vector>

namespace jitcache::bench {

/// The middle value of `values` (the upper of the two middle ones for an even count); 0 when
/// there is none.
inline double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

} // namespace jitcache::bench
