#pragma once

// The tuning record that tests/embed/make_tuning_package.cpp puts into the package that
// test_embedded_tuning links in, and that the test expects to find there.
#include <jitcache/tuning.hpp>

namespace jitcache::test {

inline tuning::Family embedded_family() {
  return tuning::Family{"embedded_sum", 1, {"TILE"}, {{"TILE", "8"}}, {}};
}

inline tuning::Device embedded_device() {
  return tuning::Device{
      "opencl", "embedded device", {{"device_name", "embedded"}, {"driver", "1"}}};
}

inline tuning::Record embedded_record(const std::string& tile = "32") {
  tuning::Record r;
  r.family = "embedded_sum";
  r.family_version = 1;
  r.problem = {{"N", "64"}};
  r.device = embedded_device();
  r.parameters = {{"TILE", tile}};
  r.best_ms = 1.5;
  r.default_ms = 3.25;
  r.when = 1700000000;
  r.jitcache_version = "0.1.0";
  r.candidates = 4;
  return r;
}

} // namespace jitcache::test
