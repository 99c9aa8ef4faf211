// The NVRTC front-end's own cost on a miss, on an application's real requests: each request of a
// capture (bench/cuda/capture_cupy_requests.py writes CuPy's) served in one process through the
// front-end's request pipeline (rtc::serve), as libjitcache-nvrtc serves it, with the real
// compile left out (it answers a small binary at once), in a new user tier: what the front-end
// adds to each compile. Then the same requests again in a second Cache of the process on the
// tier the first filled (hits, each the first of its Cache).
//
// usage: bench_front_end_miss CAPTURE.json [--prefix DIR] [--runs N]
//   --prefix DIR: put before every absolute include folder of the capture (its folders copied
//                 under DIR on another machine)
// Prints the median over the runs of each pass's total, and of its requests' median and slowest,
// in ms, as one JSON line per pass; where the capture timed its compiles, theirs too, and the
// miss's cost over them in percent (of the medians, and of the totals).

#include "bench/median.hpp"
#include "interposers/nvrtc/nvrtc_front_end.hpp"
#include "interposers/rtc/rtc_request.hpp"

#include <jitcache/cache.hpp>
#include <jitcache/config.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using jitcache::bench::median;
using jitcache::rtc::Request;

// The capture's requests; `compile_ms` gets each one's compile time where the capture timed
// them all (capture_cupy_requests.py does).
std::vector<Request> read_capture(const std::string& file, const std::string& prefix,
                                  std::vector<double>& compile_ms) {
  std::ifstream in(file);
  const nlohmann::json capture = nlohmann::json::parse(in);
  std::vector<Request> requests;
  for (const auto& one : capture) {
    if (one.contains("compile_ms"))
      compile_ms.push_back(one.at("compile_ms").get<double>());
    Request request;
    request.name = one.value("name", "");
    request.source = one.at("source").get<std::string>();
    const auto headers = one.value("headers", std::vector<std::string>{});
    const auto names = one.value("include_names", std::vector<std::string>{});
    for (std::size_t i = 0; i < headers.size() && i < names.size(); ++i)
      request.headers.push_back({names[i], headers[i]});
    request.name_expressions = one.value("name_expressions", std::vector<std::string>{});
    for (std::string option : one.at("options").get<std::vector<std::string>>()) {
      for (const std::string flag : {"-I", "--include-path="})
        if (option.compare(0, flag.size(), flag) == 0 && option.size() > flag.size() &&
            option[flag.size()] == '/')
          option = flag + prefix + option.substr(flag.size());
      request.options.push_back(std::move(option));
    }
    requests.push_back(std::move(request));
  }
  if (compile_ms.size() != requests.size())
    compile_ms.clear();
  return requests;
}

struct Pass {
  double total = 0, median = 0, slowest = 0;
};

// Every request served once by a new Cache on `dir`; the times of each, in ms.
Pass serve_all(const std::vector<Request>& requests, const std::string& dir) {
  auto variables = jitcache::Config::from_environment().variables;
  variables["JITCACHE_DIR"] = dir;
  variables["JITCACHE_SYSTEM_PATH"] = ":";
  variables.erase("JITCACHE_REMOTE");
  jitcache::Cache cache(jitcache::Config::from_variables(variables));
  const auto& front_end = jitcache::nvrtc::Api::front_end();
  const jitcache::rtc::RealCompile compile = []() -> jitcache::Expected<jitcache::rtc::Outputs> {
    jitcache::rtc::Outputs outputs;
    outputs.outputs["CUBIN"] = {0, 4096, 0, std::string(4096, 'c')};
    return outputs;
  };
  std::vector<double> ms;
  const auto start = std::chrono::steady_clock::now();
  for (const Request& request : requests) {
    const auto t = std::chrono::steady_clock::now();
    auto served = jitcache::rtc::serve(cache, front_end, request, compile);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    if (!served) {
      std::fprintf(stderr, "bench_front_end_miss: %s\n", served.error().message.c_str());
      std::exit(1);
    }
  }
  cache.flush();
  Pass pass;
  pass.total =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  pass.median = median(ms);
  pass.slowest = *std::max_element(ms.begin(), ms.end());
  return pass;
}

} // namespace

int main(int argc, char** argv) {
  std::string capture, prefix;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--prefix" && i + 1 < argc)
      prefix = argv[++i];
    else if (arg == "--runs" && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (capture.empty())
      capture = arg;
    else
      capture.clear(), i = argc;
  }
  if (capture.empty() || runs < 1) {
    std::fprintf(stderr, "usage: bench_front_end_miss CAPTURE.json [--prefix DIR] [--runs N]\n");
    return 2;
  }
  std::vector<double> compile_ms;
  const std::vector<Request> requests = read_capture(capture, prefix, compile_ms);
  std::map<std::string, std::vector<Pass>> passes;
  for (int run = 0; run < runs; ++run) {
    const fs::path dir =
        fs::temp_directory_path() /
        ("jitcache-front-end-miss-" + std::to_string(::getpid()) + "-" + std::to_string(run));
    passes["miss"].push_back(serve_all(requests, dir.string()));
    passes["hit"].push_back(serve_all(requests, dir.string()));
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  for (const auto& [name, all] : passes) {
    std::vector<double> total, med, slowest;
    for (const Pass& p : all) {
      total.push_back(p.total);
      med.push_back(p.median);
      slowest.push_back(p.slowest);
    }
    std::printf("{\"pass\": \"%s\", \"requests\": %zu, \"total_ms\": %.2f, \"median_ms\": %.3f, "
                "\"slowest_ms\": %.2f}\n",
                name.c_str(), requests.size(), median(total), median(med), median(slowest));
  }
  // The compiles as the capture timed them, and what a miss adds to them.
  if (!compile_ms.empty()) {
    double sum = 0;
    for (double ms : compile_ms)
      sum += ms;
    std::vector<double> miss_total, miss_median;
    for (const Pass& p : passes["miss"]) {
      miss_total.push_back(p.total);
      miss_median.push_back(p.median);
    }
    std::printf("{\"pass\": \"captured compile\", \"requests\": %zu, \"total_ms\": %.2f, "
                "\"median_ms\": %.3f, \"slowest_ms\": %.2f}\n",
                compile_ms.size(), sum, median(compile_ms),
                *std::max_element(compile_ms.begin(), compile_ms.end()));
    std::printf("{\"miss over compile\": {\"medians_percent\": %.2f, \"totals_percent\": %.2f}}\n",
                100 * median(miss_median) / median(compile_ms), 100 * median(miss_total) / sum);
  }
  return 0;
}
