#pragma once

#include "core/record/request_record.hpp"

#include <jitcache/expected.hpp>
#include <jitcache/store.hpp>

#include <functional>
#include <optional>

namespace jitcache::detail {

/// What a backend's compile produced (Runtime::compile).
struct Compiled {
  /// The entry, when the compile has it at once: stored, then handed to Runtime::load.
  std::optional<Entry> entry;
  /// Otherwise the compile already gave the loaded handle (OpenCL: the program built from
  /// source) and the entry is produced by `later` on a background thread, then stored (reading a
  /// PoCL binary compiles every kernel of the program: seconds).
  std::function<Expected<Entry>()> later;
  /// With `later`: produced again at flush and stored again when it changed (see
  /// Cache::store_later).
  std::function<Expected<Entry>()> refresh;
  /// With `later`: the request, for a detached process to make again and store
  /// (StoreMode::detach). Handed over at flush; `later` and `refresh` run in this process only
  /// when the hand-over fails.
  std::optional<RequestRecord> handover;
};
using Compiler = std::function<Expected<Compiled>()>;

} // namespace jitcache::detail
