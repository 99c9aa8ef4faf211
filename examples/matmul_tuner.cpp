// The example's tuning runner, for `jitcache tune RECORD --runner "jitcache_matmul_tuner DIR"`:
// reads one tuning problem of the tiled matrix multiply (jitcache::tuning::RecordedProblem) on
// its standard input, tunes it on the first OpenCL device as JITCACHE_TUNE says (select(), so
// the record lands in the user tier and the other runners wait or measure in turn), and prints
// the choice (tuning::choice_line). Candidates: the recorded ones, else every TILE and WPT of
// examples::matmul_candidates(). DIR is the folder of matmul_tuned.cl.
// Exit 1, with a line on stderr, when the problem is not this family's, the device or the
// kernel cannot be had, or no tuned record came of it.
#include "examples/tuned_matmul.hpp"

#include <jitcache/cache.hpp>

#include <iostream>
#include <iterator>
#include <string>

namespace {

int fail(const std::string& message) {
  std::cerr << "jitcache_matmul_tuner: error: " << message << '\n';
  return 1;
}

} // namespace

int main(int argc, char** argv) {
  using namespace jitcache;
  if (argc != 2)
    return fail("usage: jitcache_matmul_tuner KERNELS_DIR < problem-line");
  const std::string line((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
  auto recorded = tuning::read_problem(line);
  if (!recorded)
    return fail(recorded.error().message);
  const tuning::Family family = examples::matmul_family();
  if (recorded->family != family.name || recorded->family_version != family.version)
    return fail("not a problem of " + family.name + " version " + std::to_string(family.version) +
                ": " + recorded->family + " version " + std::to_string(recorded->family_version));
  const auto size = examples::matmul_size(recorded->problem);
  if (!size)
    return fail("the problem needs positive numbers M, N and K");
  auto source = examples::matmul_source(argv[1]);
  if (!source)
    return fail(source.error().message);

  cl_platform_id platform = nullptr;
  cl_device_id cl_device = nullptr;
  if (clGetPlatformIDs(1, &platform, nullptr) != CL_SUCCESS ||
      clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &cl_device, nullptr) != CL_SUCCESS)
    return fail("no OpenCL device");
  cl_context context = clCreateContext(nullptr, 1, &cl_device, nullptr, nullptr, nullptr);
  if (!context)
    return fail("clCreateContext failed");
  int status = 0;
  {
    auto device = opencl::tuning_device(cl_device);
    Cache cache(Config::from_environment());
    examples::MatmulProblem problem(cache, context, cl_device, size->m, size->n, size->k,
                                    std::move(*source));
    if (!device) {
      status = fail(device.error().message);
    } else {
      const tuning::Choice choice =
          tuning::select(cache, family, problem.problem(), *device,
                         problem.trials(recorded->candidates.empty() ? examples::matmul_candidates()
                                                                     : recorded->candidates));
      std::cout << tuning::choice_line(choice) << std::endl;
      if (choice.origin == tuning::Origin::heuristic || choice.origin == tuning::Origin::declared)
        status = fail("no tuned choice for " + family.name + " (see the warnings above)");
    }
  }
  clReleaseContext(context);
  return status;
}
