// Writes a package of one tuning record (tests/embed/tuning_sample.hpp) to argv[1], in the form
// `jitcache export --backend tuning` gives it, for test_embedded_tuning to link in.
#include "tests/embed/tuning_sample.hpp"

#include "core/tiers/packages/package_format.hpp"
#include "core/tuning/tuning_record.hpp"

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_tuning_package FILE\n";
    return 2;
  }
  const jitcache::tuning::Record record = jitcache::test::embedded_record();
  auto written = jitcache::detail::write_package(
      argv[1], jitcache::tuning::package_target(record),
      {{jitcache::tuning::key_of(record), jitcache::tuning::encode_record(record)}});
  if (!written) {
    std::cerr << "make_tuning_package: " << written.error().message << "\n";
    return 1;
  }
  return 0;
}
