// The cohort for jitcache/mpi.py: a Python object (an mpi4py communicator's exchange, written in
// Python) as the core's cohort::Exchange, so that the extension links no MPI: mpi4py brings it.
#include "python/src/bindings.hpp"
#include "python/src/py_cache.hpp"

#include <jitcache/cohort.hpp>
#include <jitcache/opencl.hpp>

#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace jitcache::python {

namespace {

using cohort::Clock;

// Calls the Python exchange's methods, each with the GIL taken (the cohort runs without it). A
// Python exception is the call's error; the deadlines travel as seconds left.
class PyExchange final : public cohort::Exchange {
public:
  explicit PyExchange(py::object impl) : m_impl(std::move(impl)) {
    m_rank = m_impl.attr("rank").cast<int>();
    m_size = m_impl.attr("size").cast<int>();
  }
  ~PyExchange() override {
    py::gil_scoped_acquire gil;
    m_impl = py::object();
  }

  int rank() const override { return m_rank; }
  int size() const override { return m_size; }

  Expected<void> begin(Clock::time_point deadline) override {
    return call([&]() -> Expected<void> {
      if (!m_impl.attr("begin")(left(deadline)).cast<bool>())
        return Error(ErrorCode::runtime_error, "not every rank joined in time");
      return {};
    });
  }

  Expected<std::vector<std::string>> allgather(const std::string& mine,
                                               Clock::time_point deadline) override {
    return call([&]() -> Expected<std::vector<std::string>> {
      py::object all = m_impl.attr("allgather")(py::bytes(mine), left(deadline));
      if (all.is_none())
        return Error(ErrorCode::runtime_error, "not every rank answered in time");
      return all.cast<std::vector<std::string>>();
    });
  }

  Expected<void> send(int to, std::string bytes) override {
    return call([&]() -> Expected<void> {
      m_impl.attr("send")(to, py::bytes(bytes));
      return {};
    });
  }

  Expected<std::optional<std::string>> receive(int from, Clock::time_point deadline) override {
    return call([&]() -> Expected<std::optional<std::string>> {
      py::object got = m_impl.attr("receive")(from, left(deadline));
      if (got.is_none())
        return std::optional<std::string>();
      return std::optional<std::string>(got.cast<std::string>());
    });
  }

  void end(Clock::time_point deadline) override {
    static_cast<void>(call([&]() -> Expected<void> {
      m_impl.attr("end")(left(deadline));
      return {};
    }));
  }

private:
  static double left(Clock::time_point deadline) {
    return std::chrono::duration<double>(deadline - Clock::now()).count();
  }

  template <typename Body> auto call(Body&& body) -> decltype(body()) {
    py::gil_scoped_acquire gil;
    try {
      return body();
    } catch (py::error_already_set& e) {
      return Error(ErrorCode::runtime_error, std::string("the exchange failed: ") + e.what());
    } catch (const py::cast_error& e) {
      return Error(ErrorCode::runtime_error, std::string("the exchange failed: ") + e.what());
    }
  }

  py::object m_impl;
  int m_rank = 0;
  int m_size = 1;
};

} // namespace

void bind_cohort(py::module_& m) {
  // (results, report): each result (program handle, BuildInfo, None) or (0, None, (code,
  // message, log)); the caller owns one reference to each program.
  m.def(
      "opencl_build_cohort",
      [](const PyCache& py_cache, py::object exchange, std::uintptr_t context,
         std::uintptr_t device, const std::vector<std::pair<std::string, std::string>>& requests,
         double timeout_s) {
        std::shared_ptr<Cache> cache = py_cache.get();
        PyExchange cohort(std::move(exchange));
        std::vector<opencl::Request> set;
        for (const auto& [source, options] : requests)
          set.push_back({reinterpret_cast<cl_context>(context),
                         reinterpret_cast<cl_device_id>(device), source, options});
        cohort::Options options;
        options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
        cohort::Report report;
        std::vector<Expected<opencl::Program>> built;
        {
          py::gil_scoped_release release;
          built = opencl::build_programs(*cache, cohort, set, options, &report);
        }
        py::list results;
        for (auto& one : built) {
          if (one)
            results.append(py::make_tuple(reinterpret_cast<std::uintptr_t>(one->program),
                                          std::move(one->info), py::none()));
          else
            results.append(py::make_tuple(
                0, py::none(),
                py::make_tuple(to_string(one.error().code), one.error().message, one.error().log)));
        }
        py::dict summary;
        summary["requests"] = report.requests;
        summary["distinct"] = report.distinct;
        summary["compiled"] = report.compiled;
        summary["shared"] = report.shared;
        summary["received"] = report.received;
        summary["alone"] = report.alone;
        summary["agreed"] = report.agreed;
        return py::make_tuple(results, summary);
      },
      py::arg("cache"), py::arg("exchange"), py::arg("context"), py::arg("device"),
      py::arg("requests"), py::arg("timeout_s"));
}

} // namespace jitcache::python
