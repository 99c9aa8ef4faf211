#pragma once

#include "interposers/rtc/real_library.hpp"
#include "interposers/rtc/rtc_request.hpp"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace jitcache::rtc {

/// The C API of an RTC runtime (NVRTC, hipRTC) answered through jitcache, written once for both.
/// `Api` gives the runtime's names and types:
///   using Result = ...; using Program = ...;           // nvrtcResult, nvrtcProgram
///   static constexpr Result k_success, k_internal_error;
///   struct Real { pointers to the real functions: create, destroy, add_name_expression,
///                 compile, lowered_name, and those the API file passes on };
///   static const Real* real();     // OpenOnce<Real>::get(open): opened once; null when missing
///   static const FrontEnd& front_end();
///   static const auto& outputs(); // the Get*Size/Get* pairs: a table exit never destroys
///
/// A program the front-end made is a Wrapper; the real program behind it is made (from what the
/// application gave) only when a call needs the real runtime: a miss, a call the front-end does
/// not model, or anything failing in the front-end. From then on that call, and every call
/// after it that the stored outputs cannot answer, goes to the real program, as the application
/// would have made it. A handle the front-end did not make (made while it was off) goes to the
/// real runtime untouched.
template <typename Api> class Interposer {
public:
  using Result = typename Api::Result;
  using Program = typename Api::Program;
  using Real = typename Api::Real;

  /// One Get*Size/Get* pair.
  struct OutputGetters {
    const char* name;
    Result (*Real::*size)(Program, std::size_t*);
    Result (*Real::*copy)(Program, char*);
  };

  static Result create(Program* program, const char* source, const char* name, int headers,
                       const char* const* contents, const char* const* names) {
    const Real* real = nullptr;
    const auto forward = [&] {
      if (!(real = Api::real()))
        return Api::k_internal_error;
      return real->create(program, source, name, headers, contents, names);
    };
    if (!program || !source || headers < 0 || (headers > 0 && (!contents || !names)) || off())
      return forward();
    try {
      auto wrapper = std::make_unique<Wrapper>();
      wrapper->null_name = !name;
      wrapper->request.name = name ? name : "";
      wrapper->request.source = source;
      for (int i = 0; i < headers; ++i) {
        if (!contents[i] || !names[i])
          return forward();
        wrapper->request.headers.push_back({names[i], contents[i]});
      }
      std::lock_guard<std::mutex> lock(registry().mutex);
      registry().live.insert(wrapper.get());
      *program = reinterpret_cast<Program>(wrapper.release());
      return Api::k_success;
    } catch (...) { // out of memory: the runtime's own answer
      return forward();
    }
  }

  static Result destroy(Program* program) {
    Wrapper* wrapper = program ? ours(*program) : nullptr;
    if (!wrapper)
      return through([&](const Real& real) { return real.destroy(program); });
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      registry().live.erase(wrapper);
    }
    Result result = Api::k_success;
    if (wrapper->real)
      if (const Real* real = Api::real())
        result = real->destroy(&wrapper->real);
    delete wrapper;
    *program = nullptr;
    return result;
  }

  static Result add_name_expression(Program program, const char* expression) {
    Wrapper* wrapper = ours(program);
    if (!wrapper)
      return through(
          [&](const Real& real) { return real.add_name_expression(program, expression); });
    if (!expression || wrapper->compiled)
      return on_real(wrapper, [&](const Real& real, Program own) {
        return real.add_name_expression(own, expression);
      });
    try {
      if (wrapper->real) { // made for an earlier call: it takes the expression too
        const Result result = Api::real()->add_name_expression(wrapper->real, expression);
        if (result != Api::k_success)
          return result;
      }
      wrapper->request.name_expressions.emplace_back(expression);
      return Api::k_success;
    } catch (...) {
      return on_real(wrapper, [&](const Real& real, Program own) {
        return real.add_name_expression(own, expression);
      });
    }
  }

  static Result compile(Program program, int count, const char* const* options) {
    Wrapper* wrapper = ours(program);
    const auto real_compile = [&](const Real& real, Program own) {
      return real.compile(own, count, options);
    };
    if (!wrapper)
      return through([&](const Real& real) { return real_compile(real, program); });
    bool valid = count >= 0 && (count == 0 || options);
    for (int i = 0; valid && i < count; ++i)
      valid = options[i] != nullptr;
    if (!valid || wrapper->compiled || wrapper->through || exiting()) {
      wrapper->through = true;
      return on_real(wrapper, real_compile);
    }
    std::optional<Result> ran; // what the real compile answered, when it ran
    try {
      wrapper->request.options.assign(options, options + count);
      const RealCompile compile = [&]() -> Expected<Outputs> {
        const Real* real = Api::real();
        if (!real || !made(wrapper, *real))
          return Error(ErrorCode::runtime_missing,
                       std::string(Api::front_end().runtime_name) + " cannot be opened");
        ran = real->compile(wrapper->real, count, options);
        wrapper->compiled = true;
        wrapper->real_compiled = true;
        if (*ran != Api::k_success)
          return Error(ErrorCode::compile_failed, "the compile failed"); // not stored
        return collect(*real, wrapper->real, wrapper->request.name_expressions, *ran);
      };
      if (modelled(Api::front_end(), wrapper->request))
        if (auto got = serve(process_cache(), Api::front_end(), wrapper->request, compile)) {
          wrapper->outputs = std::move(*got);
          wrapper->compiled = true;
          return static_cast<Result>(wrapper->outputs->compile_result);
        }
    } catch (...) {
      // Anything failing in the front-end: the real runtime answers, below.
    }
    if (ran)
      return *ran; // the program answers from the real compile from now on
    wrapper->outputs.reset();
    wrapper->through = true;
    return on_real(wrapper, real_compile);
  }

  /// Compiles `request` with the real runtime, in a program of its own made from it (for
  /// `jitcache warm`): every output of a successful compile. Errors: runtime_missing;
  /// runtime_error when the runtime refuses the program; compile_failed with the log.
  static Expected<Outputs> compile_alone(const Request& request) {
    const Real* real = Api::real();
    if (!real)
      return Error(ErrorCode::runtime_missing,
                   std::string(Api::front_end().runtime_name) + " cannot be opened");
    Wrapper wrapper;
    wrapper.request = request;
    wrapper.null_name = request.name.empty(); // the runtime says both mean the same
    if (!made(&wrapper, *real))
      return Error(ErrorCode::runtime_error,
                   std::string(Api::front_end().runtime_name) + " refused to create the program");
    std::vector<const char*> options;
    for (const std::string& option : request.options)
      options.push_back(option.c_str());
    const Result ran =
        real->compile(wrapper.real, static_cast<int>(options.size()), options.data());
    Outputs outputs = collect(*real, wrapper.real, request.name_expressions, ran);
    real->destroy(&wrapper.real);
    if (ran != Api::k_success) {
      const auto log = outputs.outputs.find("ProgramLog");
      return Error(ErrorCode::compile_failed, log == outputs.outputs.end()
                                                  ? std::string("the compile failed")
                                                  : log->second.bytes.c_str());
    }
    return outputs;
  }

  /// A Get*Size call of output `name` (OutputGetters::name).
  static Result output_size(Program program, const char* name, std::size_t* size) {
    const OutputGetters& getters = find(name);
    Wrapper* wrapper = ours(program);
    if (wrapper && size)
      if (const Output* output = stored(wrapper, name)) {
        if (output->size_result == Api::k_success)
          *size = output->size;
        return static_cast<Result>(output->size_result);
      }
    return answer(program, wrapper,
                  [&](const Real& real, Program own) { return (real.*getters.size)(own, size); });
  }

  /// A Get* call of output `name`.
  static Result output(Program program, const char* name, char* bytes) {
    const OutputGetters& getters = find(name);
    Wrapper* wrapper = ours(program);
    if (wrapper && bytes)
      if (const Output* output = stored(wrapper, name); output && output->copy_result) {
        if (*output->copy_result == Api::k_success)
          std::memcpy(bytes, output->bytes.data(), output->bytes.size());
        return static_cast<Result>(*output->copy_result);
      }
    return answer(program, wrapper,
                  [&](const Real& real, Program own) { return (real.*getters.copy)(own, bytes); });
  }

  static Result lowered_name(Program program, const char* expression, const char** lowered) {
    Wrapper* wrapper = ours(program);
    if (wrapper && expression && lowered && wrapper->outputs && !wrapper->through) {
      auto it = wrapper->outputs->lowered.find(expression);
      if (it != wrapper->outputs->lowered.end()) {
        if (it->second.first == Api::k_success)
          *lowered = it->second.second.c_str(); // lives as long as the program
        return static_cast<Result>(it->second.first);
      }
    }
    return answer(program, wrapper, [&](const Real& real, Program own) {
      return real.lowered_name(own, expression, lowered);
    });
  }

  /// Any other call that takes a program: the real runtime answers it, on the real program (made
  /// and compiled as the application did, when the front-end answered so far), from now on.
  template <typename Call> static Result on_program(Program program, Call call) {
    Wrapper* wrapper = ours(program);
    if (!wrapper)
      return through([&](const Real& real) { return call(real, program); });
    wrapper->through = true;
    return on_real(wrapper, call);
  }

  /// A call that takes no program and whose answer depends on the runtime's library alone (its
  /// version, its targets): `from` answers it from the LibraryAnswers remembered for the library
  /// (nullopt where they cannot: a null pointer given), so that a process that asks opens no
  /// runtime. The first answers the process gets are kept for the rest of it, so that two calls
  /// always agree (a count and the list it sizes), as one library's would, and a call during
  /// exit needs nothing that exit destroys. The real runtime answers instead when it was open
  /// before the first such call, when the front-end is off, during exit before any was made, and
  /// when anything fails.
  template <typename From, typename Call> static Result known(From from, Call call) {
    const LibraryAnswers* kept = s_kept.load(std::memory_order_acquire);
    if (!kept && !OpenOnce<Real>::opened() && !off()) {
      try {
        const FrontEnd& front_end = Api::front_end();
        Cache& cache = process_cache();
        if (auto answers = library_answers(cache, front_end.name, front_end.answers))
          kept = keep(std::move(*answers));
      } catch (...) {
        // Out of memory: the real runtime answers, below.
      }
    }
    if (kept)
      if (std::optional<Result> answer = from(*kept))
        return *answer;
    return through(call);
  }

  /// The runtime's version call (`call`, the Real member that makes it), answered as known() does.
  static Result version(int* major, int* minor, Result (*Real::*call)(int*, int*)) {
    return known(
        [&](const LibraryAnswers& answers) -> std::optional<Result> {
          if (!major || !minor)
            return std::nullopt;
          *major = answers.major;
          *minor = answers.minor;
          return Api::k_success;
        },
        [&](const Real& real) { return (real.*call)(major, minor); });
  }

  /// A call that takes no program: the real runtime's, or `missing` without one.
  template <typename Call, typename Missing> static auto pass(Call call, Missing missing) {
    const Real* real = Api::real();
    return real ? call(*real) : missing();
  }

private:
  struct Wrapper {
    Request request;
    bool null_name = false;
    Program real = nullptr;                 ///< made when a call needs the real runtime
    bool real_compiled = false;             ///< the real program was compiled
    bool compiled = false;                  ///< compile-program was answered (by either)
    bool through = false;                   ///< every call goes to the real program from now on
    std::shared_ptr<const Outputs> outputs; ///< the compile's, when the front-end answered it
  };

  struct Registry {
    std::mutex mutex;
    std::unordered_set<const Wrapper*> live;
  };
  static Registry& registry() {
    static Registry* registry = new Registry; // never destroyed: calls may come during exit
    return *registry;
  }

  // known()'s: the first answers the process got (never freed: calls may come during exit).
  static inline std::atomic<const LibraryAnswers*> s_kept{nullptr};

  // `answers` kept for the process, unless another thread kept its own first: those kept.
  static const LibraryAnswers* keep(LibraryAnswers answers) {
    auto fresh = std::make_unique<LibraryAnswers>(std::move(answers));
    const LibraryAnswers* first = nullptr;
    if (s_kept.compare_exchange_strong(first, fresh.get(), std::memory_order_acq_rel))
      return fresh.release();
    return first;
  }

  // Off, or exit has come to what serving needs (the configuration, the description, the
  // Cache): checked before any of them is touched.
  static bool off() {
    if (exiting())
      return true;
    try {
      return turned_off(Api::front_end().name);
    } catch (...) {
      return true;
    }
  }

  static Wrapper* ours(Program program) {
    auto* candidate = reinterpret_cast<Wrapper*>(program);
    std::lock_guard<std::mutex> lock(registry().mutex);
    return registry().live.count(candidate) ? candidate : nullptr;
  }

  template <typename Call> static Result through(Call call) {
    const Real* real = Api::real();
    return real ? call(*real) : Api::k_internal_error;
  }

  // What the front-end does on the way to the real runtime may run out of memory; nothing may
  // leave a C function.
  template <typename Call> static Result guarded(Call call) {
    try {
      return call();
    } catch (...) {
      return Api::k_internal_error;
    }
  }

  static const OutputGetters& find(const char* name) {
    for (const OutputGetters& getters : Api::outputs())
      if (std::strcmp(getters.name, name) == 0)
        return getters;
    return Api::outputs().front(); // not reached: the API files name only their own
  }

  static const Output* stored(const Wrapper* wrapper, const char* name) {
    if (!wrapper->outputs || wrapper->through)
      return nullptr;
    auto it = wrapper->outputs->outputs.find(name);
    return it == wrapper->outputs->outputs.end() ? nullptr : &it->second;
  }

  // Makes the real program from what the application gave, when it has not been.
  static bool made(Wrapper* wrapper, const Real& real) {
    if (wrapper->real)
      return true;
    const Request& request = wrapper->request;
    std::vector<const char*> names, contents;
    for (const Header& header : request.headers) {
      names.push_back(header.name.c_str());
      contents.push_back(header.content.c_str());
    }
    Program own = nullptr;
    if (real.create(
            &own, request.source.c_str(), wrapper->null_name ? nullptr : request.name.c_str(),
            static_cast<int>(names.size()), contents.data(), names.data()) != Api::k_success)
      return false;
    wrapper->real = own;
    for (const std::string& expression : request.name_expressions)
      real.add_name_expression(own, expression.c_str());
    return true;
  }

  // The real program in the state the application's calls put it in: made, and compiled with
  // the application's options when compile-program was answered from the cache.
  static Program real_state(Wrapper* wrapper, const Real& real) {
    if (!made(wrapper, real))
      return nullptr;
    if (wrapper->compiled && !wrapper->real_compiled) {
      std::vector<const char*> options;
      for (const std::string& option : wrapper->request.options)
        options.push_back(option.c_str());
      real.compile(wrapper->real, static_cast<int>(options.size()), options.data());
      wrapper->real_compiled = true;
    }
    return wrapper->real;
  }

  template <typename Call> static Result on_real(Wrapper* wrapper, Call call) {
    return guarded([&] {
      const Real* real = Api::real();
      if (!real)
        return Api::k_internal_error;
      const Program own = real_state(wrapper, *real);
      return own ? call(*real, own) : Api::k_internal_error;
    });
  }

  // A modelled call the stored outputs cannot answer: the real program answers it.
  template <typename Call> static Result answer(Program program, Wrapper* wrapper, Call call) {
    if (!wrapper)
      return through([&](const Real& real) { return call(real, program); });
    return on_real(wrapper, call);
  }

  // Everything a successful compile of `program` produced, each output as the runtime gives it.
  static Outputs collect(const Real& real, Program program,
                         const std::vector<std::string>& expressions, Result compiled) {
    Outputs outputs;
    outputs.compile_result = static_cast<int>(compiled);
    for (const OutputGetters& getters : Api::outputs()) {
      Output output;
      output.size_result = static_cast<int>((real.*getters.size)(program, &output.size));
      if (output.size_result == static_cast<int>(Api::k_success)) {
        output.bytes.assign(output.size, '\0');
        output.copy_result = static_cast<int>((real.*getters.copy)(program, output.bytes.data()));
      } else {
        output.size = 0;
      }
      outputs.outputs.emplace(getters.name, std::move(output));
    }
    for (const std::string& expression : expressions) {
      const char* lowered = nullptr;
      const Result result = real.lowered_name(program, expression.c_str(), &lowered);
      outputs.lowered[expression] = {static_cast<int>(result),
                                     result == Api::k_success && lowered ? lowered : ""};
    }
    return outputs;
  }
};

} // namespace jitcache::rtc
