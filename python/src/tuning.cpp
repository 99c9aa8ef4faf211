// The tuning database for jitcache/tuning.py: lookup, tune and select with Python callables
// (the heuristic, prepare, a trial's run and output, check). The Python objects are held in
// shared_ptrs whose deleter takes the GIL, so C++ may copy the callbacks with the GIL released;
// each callback takes the GIL while it runs. A Python exception in prepare or run skips the
// candidate (its message is the reason logged); in the heuristic it means "no guess".
#include "python/src/bindings.hpp"
#include "python/src/errors.hpp"
#include "python/src/py_cache.hpp"

#include <jitcache/tuning.hpp>

#include <pybind11/chrono.h>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

namespace py = pybind11;

namespace jitcache::python {

namespace {

using PyRef = std::shared_ptr<py::object>;

// `object` held so that its last release takes the GIL.
PyRef hold(py::object object) {
  return PyRef(new py::object(std::move(object)), [](py::object* held) {
    py::gil_scoped_acquire gil;
    delete held;
  });
}

Error python_error(const py::error_already_set& error) {
  return Error(ErrorCode::runtime_error, error.what());
}

tuning::Family family_of(const py::tuple& spec) {
  tuning::Family family;
  family.name = spec[0].cast<std::string>();
  family.version = spec[1].cast<std::uint32_t>();
  family.parameters = spec[2].cast<std::vector<std::string>>();
  family.defaults = spec[3].cast<tuning::Parameters>();
  if (!spec[4].is_none()) {
    PyRef heuristic = hold(spec[4]);
    family.heuristic =
        [heuristic](const tuning::Problem& problem,
                    const tuning::Device& device) -> std::optional<tuning::Parameters> {
      py::gil_scoped_acquire gil;
      try {
        py::object guess =
            (*heuristic)(problem, py::make_tuple(device.backend, device.name, device.identity));
        if (guess.is_none())
          return std::nullopt;
        return guess.cast<tuning::Parameters>();
      } catch (const py::error_already_set&) {
        return std::nullopt; // a heuristic that fails has no guess
      } catch (const py::cast_error&) {
        return std::nullopt;
      }
    };
  }
  return family;
}

tuning::Device device_of(const py::tuple& spec) {
  return {spec[0].cast<std::string>(), spec[1].cast<std::string>(),
          spec[2].cast<std::vector<std::pair<std::string, std::string>>>()};
}

// prepare(parameters, defines) returns run, or (run, output): output() -> bytes.
tuning::Trials trials_of(std::vector<tuning::Parameters> candidates, const py::object& prepare,
                         const py::object& check) {
  tuning::Trials trials;
  trials.candidates = std::move(candidates);
  PyRef py_prepare = hold(prepare);
  trials.prepare = [py_prepare](const tuning::Parameters& parameters,
                                const std::string& defines) -> Expected<tuning::Trial> {
    py::gil_scoped_acquire gil;
    try {
      py::object made = (*py_prepare)(parameters, defines);
      PyRef run, output;
      if (py::isinstance<py::tuple>(made) && py::len(made) == 2) {
        run = hold(made.cast<py::tuple>()[0]);
        output = hold(made.cast<py::tuple>()[1]);
      } else {
        run = hold(made);
      }
      if (!PyCallable_Check(run->ptr()) || (output && !PyCallable_Check(output->ptr())))
        return Error(ErrorCode::invalid_argument,
                     "prepare must return run or (run, output), callables");
      tuning::Trial trial;
      trial.run = [run]() -> Expected<void> {
        py::gil_scoped_acquire gil;
        try {
          (*run)();
          return {};
        } catch (const py::error_already_set& error) {
          return python_error(error);
        }
      };
      if (output)
        trial.output = [output]() -> std::string {
          py::gil_scoped_acquire gil;
          try {
            return (*output)().cast<std::string>();
          } catch (const std::exception&) {
            return {}; // no output: check (or byte equality) refuses it
          }
        };
      return trial;
    } catch (const py::error_already_set& error) {
      return python_error(error);
    }
  };
  if (!check.is_none()) {
    PyRef py_check = hold(check);
    trials.check = [py_check](std::string_view reference, std::string_view output) {
      py::gil_scoped_acquire gil;
      try {
        return (*py_check)(py::bytes(reference.data(), reference.size()),
                           py::bytes(output.data(), output.size()))
            .cast<bool>();
      } catch (const std::exception&) {
        return false;
      }
    };
  }
  return trials;
}

py::object record_of(const std::optional<tuning::Record>& record) {
  if (!record)
    return py::none();
  py::dict out;
  out["family"] = record->family;
  out["family_version"] = record->family_version;
  out["problem"] = record->problem;
  out["device"] = record->device.name;
  out["parameters"] = record->parameters;
  out["best_ms"] = record->best_ms;
  out["default_ms"] = record->default_ms;
  out["method"] = tuning::to_string(record->method);
  out["when"] = record->when;
  out["jitcache_version"] = record->jitcache_version;
  out["candidates"] = record->candidates;
  out["skipped"] = record->skipped;
  return std::move(out);
}

py::tuple choice_of(const tuning::Choice& choice) {
  return py::make_tuple(choice.parameters, tuning::to_string(choice.origin),
                        record_of(choice.record));
}

tuning::TuneOptions options_of(int warmup, int repeats, double time_limit_s, bool wait) {
  tuning::TuneOptions options;
  options.warmup = warmup;
  options.repeats = repeats;
  options.time_limit = std::chrono::milliseconds(static_cast<long long>(time_limit_s * 1000));
  options.wait = wait;
  return options;
}

} // namespace

void bind_tuning(py::module_& m) {
  m.def(
      "tuning_lookup",
      [](const PyCache& py_cache, const py::tuple& family, const tuning::Problem& problem,
         const py::tuple& device) {
        std::shared_ptr<Cache> cache = py_cache.get();
        const tuning::Family f = family_of(family);
        const tuning::Device d = device_of(device);
        tuning::Choice choice;
        {
          py::gil_scoped_release release;
          choice = tuning::lookup(*cache, f, problem, d);
        }
        return choice_of(choice);
      },
      py::arg("cache"), py::arg("family"), py::arg("problem"), py::arg("device"),
      "(parameters, origin, record dict or None)");
  m.def(
      "tuning_tune",
      [](const PyCache& py_cache, const py::tuple& family, const tuning::Problem& problem,
         const py::tuple& device, std::vector<tuning::Parameters> candidates,
         const py::object& prepare, const py::object& check, int warmup, int repeats,
         double time_limit_s, bool wait, const std::optional<std::string>& mode, bool select) {
        std::shared_ptr<Cache> cache = py_cache.get();
        const tuning::Family f = family_of(family);
        const tuning::Device d = device_of(device);
        const tuning::Trials trials = trials_of(std::move(candidates), prepare, check);
        const tuning::TuneOptions options = options_of(warmup, repeats, time_limit_s, wait);
        std::optional<TuneMode> tune_mode;
        if (mode) {
          const std::pair<const char*, TuneMode> modes[] = {{"off", TuneMode::off},
                                                            {"missing", TuneMode::missing},
                                                            {"all", TuneMode::all},
                                                            {"retune", TuneMode::retune},
                                                            {"clean", TuneMode::clean}};
          for (const auto& [name, value] : modes)
            if (*mode == name)
              tune_mode = value;
          if (!tune_mode)
            raise_error(Error(ErrorCode::invalid_argument,
                              "mode must be off, missing, all, retune or clean, not " + *mode));
        }
        if (select) {
          tuning::Choice choice;
          {
            py::gil_scoped_release release;
            choice = tuning::select(*cache, f, problem, d, trials, tune_mode, options);
          }
          return choice_of(choice);
        }
        Expected<tuning::Choice> tuned = Error();
        {
          py::gil_scoped_release release;
          tuned = tuning::tune(*cache, f, problem, d, trials, options);
        }
        if (!tuned)
          raise_error(tuned.error());
        return choice_of(*tuned);
      },
      py::arg("cache"), py::arg("family"), py::arg("problem"), py::arg("device"),
      py::arg("candidates"), py::arg("prepare"), py::arg("check"), py::arg("warmup"),
      py::arg("repeats"), py::arg("time_limit_s"), py::arg("wait"), py::arg("mode"),
      py::arg("select"), "tune() (select false) or select() (select true): a choice tuple");
}

} // namespace jitcache::python
