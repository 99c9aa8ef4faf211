#include <jitcache/opencl.hpp>

#include "backends/opencl/opencl_key.hpp"
#include "backends/opencl/opencl_runtime.hpp"
#include "core/cohort/cohort.hpp"
#include "core/engine/pipeline.hpp"

#include <deque>

#include <string_view>

namespace jitcache::opencl {

Expected<Key> make_key(const Config& config, cl_device_id device, std::string_view source,
                       std::string_view options) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  return key_for(*id, config, source, options);
}

Expected<tuning::Device> tuning_device(cl_device_id device) {
  auto id = identity(device);
  if (!id)
    return std::move(id).error();
  tuning::Device out{"opencl", id->device_name, id->device};
  out.identity.insert(out.identity.end(), id->toolchain.begin(), id->toolchain.end());
  return out;
}

Expected<Program> build_program(Cache& cache, cl_context context, cl_device_id device,
                                std::string_view source, std::string_view options) {
  Runtime runtime(cache, context, device, source, options);
  auto answer = detail::serve_request(cache, runtime);
  if (!answer)
    return std::move(answer).error();
  auto program = static_cast<cl_program>(answer->handle.get());
  clRetainProgram(program);
  return Program{program, std::move(answer->info)};
}

std::vector<Expected<Program>> build_programs(Cache& cache, cohort::Exchange& exchange,
                                              const std::vector<Request>& requests,
                                              const cohort::Options& options,
                                              cohort::Report* report) {
  std::deque<Runtime> runtimes; // not moved: the pipeline holds pointers to them
  std::vector<detail::Runtime*> set;
  for (const Request& request : requests)
    set.push_back(&runtimes.emplace_back(cache, request.context, request.device, request.source,
                                         request.options));
  std::vector<Expected<Program>> programs;
  for (auto& answer : detail::serve_cohort(cache, exchange, set, options, report)) {
    if (!answer) {
      programs.emplace_back(std::move(answer).error());
      continue;
    }
    auto program = static_cast<cl_program>(answer->handle.get());
    clRetainProgram(program);
    programs.emplace_back(Program{program, std::move(answer->info)});
  }
  return programs;
}

} // namespace jitcache::opencl
