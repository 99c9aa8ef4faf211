#pragma once

#include "core/engine/backend.hpp"
#include "core/record/request_replay.hpp"
#include "interposers/rtc/rtc_interposer.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jitcache::rtc {

/// A front-end's requests as the command-line tool sees them: what JITCACHE_RECORD recorded of an
/// application's calls, made again by `jitcache warm` through the request pipeline with the real
/// runtime, for the recorded target or another. The targets are those of `backend`, the backend
/// whose identity code the front-end reuses (CUDA's for NVRTC, HIP's for hipRTC): it claims and
/// checks them, and gives the facts. `Api` as for Interposer.
template <typename Api> class FrontEndBackend final : public detail::Backend {
public:
  explicit FrontEndBackend(std::unique_ptr<detail::Backend> backend)
      : m_backend(std::move(backend)) {}

  std::string name() const override { return Api::front_end().name; }

  Expected<BuildInfo> build(Cache&, const detail::BuildRequest&) override {
    return Error(ErrorCode::unsupported, "the " + name() +
                                             " front-end's requests are an application's: "
                                             "record them (JITCACHE_RECORD) and warm the record");
  }

  bool claims_target(const std::string& target) const override {
    return m_backend->claims_target(target);
  }

  Expected<void> check_target(const std::string& target) override {
    return m_backend->check_target(target);
  }

  Expected<BuildInfo> replay(Cache& cache, const detail::RequestRecord& record,
                             const std::string& target, int,
                             const std::filesystem::path&) override {
    const FrontEnd& front_end = Api::front_end();
    // The key built from the files stands in for a recalled one: a front-end's replay is
    // rare beside the compile it makes.
    const auto make_key = [&](const Request& request) {
      return key_of(cache.config(), front_end, request);
    };
    auto request = detail::replayed_program<Request>(record, make_key, make_key);
    if (!request)
      return std::move(request).error();
    if (!target.empty())
      request->options = with_target(front_end, request->options, target);
    BuildInfo info;
    const RealCompile compile = [&] { return Api::Interposer::compile_alone(*request); };
    if (auto served = serve(cache, front_end, *request, compile, &info); !served)
      return std::move(served).error();
    return info;
  }

  Expected<Key> key(const Config&, const detail::BuildRequest&) override {
    return Error(ErrorCode::unsupported,
                 "the " + name() + " front-end's keys are those of an application's requests");
  }

  std::vector<std::pair<std::string, std::string>> facts(const Config& config) override {
    return m_backend->facts(config);
  }

private:
  std::unique_ptr<detail::Backend> m_backend;
};

} // namespace jitcache::rtc
