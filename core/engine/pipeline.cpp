#include "core/engine/pipeline.hpp"

#include "core/engine/cache_core.hpp"
#include "core/key/library_identity.hpp"
#include "core/key/manifest.hpp"
#include "core/record/request_log.hpp"
#include "core/support/clock.hpp"
#include "core/support/log.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace jitcache::detail {

namespace {

using Loaded = HandleCache::Loaded;
using Handle = HandleCache::Handle;

std::string_view bytes_of(const void* const& pointer) {
  return {reinterpret_cast<const char*>(&pointer), sizeof pointer};
}

// The name the key of `runtime`'s request with these `arguments`, compiled by `identity`, is
// remembered under (see record_name).
Digest key_name(const Config& config, const Runtime& runtime, const std::string& identity,
                const std::string& target, std::string_view arguments) {
  const char* backend = runtime.backend();
  return record_name(std::string(backend) + " key",
                     {runtime.identity_in_names(identity), target,
                      fields_text(config.compile_environment(backend)), arguments});
}

RequestHash arguments_of(const Runtime& runtime) {
  RequestHasher hasher;
  runtime.arguments(hasher);
  return hasher.digest();
}

// Whether building the request's key may read a file (see may_read_files(std::string_view)):
// whether any of its arguments may.
bool may_read_any_file(const Runtime& runtime) {
  class Scan final : public RequestParts {
  public:
    void add(std::string_view part) override { found = found || may_read_files(part); }
    void add_count(std::size_t) override {}
    bool found = false;
  } scan;
  runtime.arguments(scan);
  return scan.found;
}

PendingKey::Build key_builder(const Runtime& runtime) {
  return [&runtime]() -> Expected<std::pair<Key, Dependencies>> { return runtime.make_key(); };
}

// One request on its way through the steps serve_request() lists.
class Pipeline {
  // A key the packages step settled and walked every tier for, and what that walk refused.
  struct Tried {
    std::vector<KeyField> fields; ///< the packaged toolchain it was built with
    GuardedKey keyed;
    CacheCore::Refusals refusals;
  };

public:
  Pipeline(Cache& cache, Runtime& runtime)
      : m_cache(cache), m_core(core_of(cache)), m_runtime(runtime), m_backend(runtime.backend()) {}

  Expected<Answer> run() {
    if (auto ok = m_runtime.check(); !ok)
      return std::move(ok).error();
    m_place = m_runtime.place();
    m_arguments = arguments_of(m_runtime);
    HandleCache& handles = m_core.handles();
    std::optional<RequestHash> request;
    if (m_place) {
      RequestHasher hasher;
      for (std::string_view part : {std::string_view(m_backend), bytes_of(m_place->context),
                                    bytes_of(m_place->device), m_arguments.bytes()})
        hasher.add(part);
      request = hasher.digest();
      if (auto loaded = handles.find(*request))
        return answer(*loaded, false);
    }

    // A request whose key is built from no file, where the packages' target is told without the
    // identity, recalls it only when no package serves the request: a package hit then reads
    // nothing of the user tier. A request built from files needs the user tier's manifest (its
    // key is proven while the remembered entry loads: see with_compiler), so the identity is
    // recalled first, as it costs nothing more then.
    m_reads_files = may_read_any_file(m_runtime);
    const bool recall_first = m_runtime.package_target_needs_identity() || m_reads_files;
    std::optional<std::string> known;
    if (recall_first)
      known = recalled_identity();
    GuardedKey keyed;
    std::optional<Loaded> loaded = from_packages(known ? &*known : nullptr, keyed);
    if (!loaded) {
      if (!recall_first)
        known = recalled_identity();
      bool remembered = known.has_value();
      Expected<std::string> identity = known ? Expected<std::string>(*known)
                                             : identity_for_keys(m_cache, m_runtime, &remembered);
      if (!identity)
        return identity.error();
      for (;;) {
        bool stale = false;
        auto got = with_compiler(*identity, keyed, stale, tried_with(*identity));
        if (!stale || !remembered) {
          if (!got)
            return std::move(got).error();
          loaded = std::move(*got);
          break;
        }
        log::info(std::string("the ") + m_backend +
                  " compiler is not the library whose identity was remembered; building the key "
                  "again");
        remembered = false;
        auto real = m_runtime.probe();
        if (!real)
          return std::move(real).error();
        identity = std::move(real->identity);
      }
    }
    record_request(
        m_cache.config(), keyed.key, [&] { return m_runtime.describe(); },
        [&] { return m_runtime.make_key().first; });
    if (request)
      handles.alias(*request, *loaded, std::move(keyed.guards));
    return answer(*loaded, m_ran);
  }

private:
  // The identity the user tier remembers for the compiler's library search, read without
  // opening the compiler; nullopt when none is (or the runtime remembers none).
  std::optional<std::string> recalled_identity() {
    std::optional<std::string> known;
    if (const LibrarySearch* search = m_runtime.library_search())
      recall_identity(m_core, m_backend, *search, [&](std::string_view stored) {
        known = std::string(stored);
        return true;
      });
    return known;
  }

  // A persistent hit is never copied into the memory tier of entries for a request: what holds
  // the answer is the loader's memory tier of handles, or, for an offline compile (a front-end's
  // program), its outputs, which the application keeps as long as it needs them; a repeat reads
  // the tier that answered it again. The copy, into fresh pages of the heap that the process keeps,
  // cost more than the rest of the hit (a third of a 55 KB binary's hit).
  static constexpr CacheCore::Memory k_memory = CacheCore::Memory::skip;

  std::optional<HandleCache::Slot> slot(const Digest& key) const {
    if (!m_place)
      return std::nullopt;
    return HandleCache::Slot{key, m_place->context, m_place->device};
  }

  PendingKey pending_key(const std::string& identity, const std::string& target,
                         bool background) const {
    return PendingKey(m_core, m_backend,
                      key_name(m_cache.config(), m_runtime, identity, target, m_arguments.bytes()),
                      key_builder(m_runtime), background, m_reads_files);
  }

  // The key the packages step walked every tier for with the compiler `identity` names (the
  // packaged identity the runtime calls the same compiler), so that the next step builds and
  // walks it no second time; nullptr when there is none.
  Tried* tried_with(const std::string& identity) {
    for (Tried& tried : m_tried)
      if (!m_runtime.packaged_identity(tried.fields, &identity))
        return &tried;
    return nullptr;
  }

  // Hands a stored entry to the runtime's load: the handle to `handle`, the load's time (for a
  // request that loads) and note to `info`.
  EntryReceiver receiver(Handle& handle, BuildInfo& info) {
    return [this, &handle, &info](const EntryView& entry) -> Expected<void> {
      const Stopwatch clock;
      std::string note;
      auto got = m_runtime.load(entry, note);
      if (m_place)
        info.load_ms = clock.ms();
      if (!got)
        return std::move(got).error();
      handle = std::move(*got);
      if (!note.empty())
        info.note += (info.note.empty() ? "" : "; ") + note;
      return {};
    };
  }

  // Packages first: keys built with each compiler identity the packages' entries for this
  // target were made with, the one `known` names aside (the next step builds that key). Without
  // `known`, each key walked in vain is kept for the next step (tried_with).
  std::optional<Loaded> from_packages(const std::string* known, GuardedKey& keyed) {
    if (!m_core.has_packages())
      return std::nullopt;
    auto target = m_runtime.package_target(known);
    if (!target)
      return std::nullopt; // told only with the compiler open: the next steps need it anyway
    for (const std::vector<KeyField>& fields : m_core.packaged_toolchains(*target)) {
      const auto identity = m_runtime.packaged_identity(fields, known);
      if (!identity)
        continue;
      auto chosen = m_runtime.select(*identity);
      if (!chosen)
        continue;
      // A new machine proves a package's portable manifest while the entry it names loads.
      PendingKey pending = pending_key(*identity, *chosen, m_runtime.check_stamps_aside());
      Settled settled = settle(pending, *chosen);
      if (settled.loaded) {
        keyed = std::move(settled.keyed);
        return std::move(settled.loaded);
      }
      GuardedKey candidate = std::move(settled.keyed);
      CacheCore::Refusals refusals = std::move(settled.refusals);
      if (settled.walked) { // the guess was the key, and the tiers have no usable entry for it
        if (!known)
          m_tried.push_back(Tried{fields, std::move(candidate), std::move(refusals)});
        continue;
      }
      const auto place = slot(candidate.key.digest);
      if (place)
        if (auto found = m_core.handles().find(*place)) {
          m_ran = false;
          keyed = std::move(candidate);
          return found;
        }
      BuildInfo info;
      info.device = *chosen;
      Handle handle;
      auto got = m_core.serve(candidate.key, receiver(handle, info), info, refusals, k_memory);
      if (!got || !*got) {
        if (got && !known) // maybe this machine's compiler's key: see tried_with
          m_tried.push_back(Tried{fields, std::move(candidate), std::move(refusals)});
        continue; // an error is met again, and reported, on the way below
      }
      m_core.count_hit(candidate.key, **got, info);
      Loaded loaded{handle, info};
      if (place)
        m_core.handles().insert(*place, loaded);
      keyed = std::move(candidate);
      return loaded;
    }
    return std::nullopt;
  }

  // The request with compiler `identity`: the remembered key's entry loaded while its stamps
  // are checked, then (when the key proves another, or none was remembered) the tier walk and
  // the compile. `stale` is set when the compile found that the compiler is not `identity`.
  // `tried`: the key of `identity`, settled and walked by the packages step (no guess then).
  Expected<Loaded> with_compiler(const std::string& identity, GuardedKey& keyed, bool& stale,
                                 Tried* tried) {
    auto target = m_runtime.select(identity);
    if (!target)
      return std::move(target).error();
    if (tried) {
      keyed = tried->keyed;
      return obtained(identity, keyed.key, *target, stale, std::move(tried->refusals));
    }
    PendingKey pending = pending_key(identity, *target, m_runtime.check_stamps_aside());
    Settled settled = settle(pending, *target);
    keyed = std::move(settled.keyed);
    if (settled.loaded)
      return std::move(*settled.loaded);
    return obtained(identity, keyed.key, *target, stale, std::move(settled.refusals), settled.note);
  }

  // A key settled, and the entry of its guess loaded meanwhile.
  struct Settled {
    GuardedKey keyed;
    std::optional<Loaded> loaded; ///< the settled key's entry, loaded (the hit counted)
    bool walked = false;          ///< the tiers were walked for the settled key in vain
    CacheCore::Refusals refusals; ///< what that walk refused (not tried again)
    std::string note;             ///< what it reported
  };

  // The speculative step: the entry of the key `pending` most likely settles on is loaded for
  // `target` while its proof runs (on another thread where the runtime says it pays: a heavy
  // module's load, milliseconds, hides the hundreds of stat calls of a key with many headers).
  // The hit is counted, and the handle used, only once the proof held; otherwise it is dropped
  // and the caller takes the key built from the files the usual way.
  Settled settle(PendingKey& pending, const std::string& target) {
    Settled out;
    BuildInfo info;
    info.device = target;
    Handle handle;
    HandleCache& handles = m_core.handles();
    std::optional<Loaded> speculative;
    std::optional<Served> served;
    bool from_handles = false;
    std::optional<Digest> guessed;
    // Without the thread, nothing hides the check: prove the key first rather than load an entry
    // that may be thrown away.
    const Key* guess = m_runtime.check_stamps_aside() ? pending.guess() : nullptr;
    if (guess) {
      guessed = guess->digest;
      if (auto place = slot(guess->digest); place && (speculative = handles.find(*place))) {
        from_handles = true;
      } else if (auto got =
                     m_core.serve(*guess, receiver(handle, info), info, out.refusals, k_memory);
                 got && *got) {
        served = **got;
        speculative = Loaded{handle, info};
      }
    }
    out.keyed = *pending.settle(); // building the key cannot fail
    if (out.keyed.key.digest != guessed) {
      out.refusals = {}; // they apply to the guessed key's entries only
      return out;
    }
    if (!speculative) {
      out.walked = true;
      out.note = info.note;
      return out;
    }
    if (from_handles) {
      m_ran = false;
    } else {
      m_core.count_hit(out.keyed.key, *served, speculative->info);
      if (auto place = slot(out.keyed.key.digest))
        handles.insert(*place, *speculative);
    }
    out.loaded = std::move(speculative);
    return out;
  }

  // Step 5 for `key`, built with compiler `identity` for `target`: the tier walk and, on a
  // miss, the compile. `carried`: what an earlier walk for the same key refused; `note`: what
  // it reported.
  Expected<Loaded> obtained(const std::string& identity, const Key& key, const std::string& target,
                            bool& stale, CacheCore::Refusals carried,
                            const std::string& note = {}) {
    BuildInfo info;
    info.device = target;
    info.note = note; // a refusal of the guessed key's entry is reported
    Handle handle;
    const EntryReceiver use = receiver(handle, info);
    HandleCache& handles = m_core.handles();
    const bool checked = m_runtime.library_search() != nullptr;
    const Compiler compile = [&]() -> Expected<Compiled> {
      if (checked) { // the identity may be a remembered one: the compiler opened must be it
        auto real = m_runtime.probe();
        if (!real)
          return std::move(real).error();
        if (real->identity != identity) {
          stale = true;
          return Error(ErrorCode::runtime_error, std::string("the ") + m_backend +
                                                     " compiler changed since its identity was "
                                                     "remembered");
        }
      }
      return m_runtime.compile(key, handle);
    };
    const auto obtain = [&]() -> Expected<Loaded> {
      if (auto got = m_core.obtain(key, compile, use, info, k_memory, std::move(carried)); !got)
        return std::move(got).error();
      return Loaded{handle, info};
    };
    const auto place = slot(key.digest);
    if (!place)
      return obtain();
    return handles.get_or_load(*place, obtain, m_ran);
  }

  // The answer for `loaded`: as obtained (`ran`), or a memory hit.
  Answer answer(const Loaded& loaded, bool ran) {
    BuildInfo info = loaded.info;
    if (!ran) {
      info = m_core.memory_hit(m_backend, loaded.info);
      if (std::string note = m_runtime.memory_note(loaded.handle); !note.empty())
        info.note = std::move(note);
    }
    info.total_ms = m_total.ms();
    return Answer{loaded.handle, std::move(info)};
  }

  const Stopwatch m_total;
  Cache& m_cache;
  CacheCore& m_core;
  Runtime& m_runtime;
  const char* const m_backend;
  std::optional<Place> m_place;
  RequestHash m_arguments;
  bool m_reads_files = true;  ///< may_read_any_file(), once past the memory tier of handles
  std::vector<Tried> m_tried; ///< see tried_with
  bool m_ran = true;          ///< false when the handle came from the memory tier of handles
};

} // namespace

Expected<Answer> serve_request(Cache& cache, Runtime& runtime) {
  return Pipeline(cache, runtime).run();
}

Expected<Key> current_key(Runtime& runtime) {
  if (auto ok = runtime.check(); !ok)
    return std::move(ok).error();
  auto probed = runtime.probe();
  if (!probed)
    return std::move(probed).error();
  if (auto selected = runtime.select(probed->identity); !selected)
    return std::move(selected).error();
  return runtime.make_key().first;
}

Expected<Key> remembered_current_key(Cache& cache, Runtime& runtime) {
  if (auto ok = runtime.check(); !ok)
    return std::move(ok).error();
  bool remembered = false;
  auto identity = identity_for_keys(cache, runtime, &remembered);
  if (!identity)
    return std::move(identity).error();
  auto target = runtime.select(*identity);
  if (!target)
    return std::move(target).error();
  auto keyed = remembered_key(cache, runtime, *identity, *target).settle();
  if (!keyed)
    return std::move(keyed).error();
  return std::move(keyed->key);
}

Expected<std::string> identity_for_keys(Cache& cache, Runtime& runtime, bool* remembered) {
  const LibrarySearch* search = runtime.library_search();
  if (!search) {
    auto probed = runtime.probe();
    if (!probed)
      return std::move(probed).error();
    return std::move(probed->identity);
  }
  std::string identity;
  auto found = recall_or_probe(
      core_of(cache), runtime.backend(), *search,
      [&](std::string_view stored) {
        identity = std::string(stored);
        return true;
      },
      [&]() -> Expected<ProbedLibraries<std::string>> {
        auto probed = runtime.probe();
        if (probed)
          identity = probed->identity;
        return probed;
      },
      remembered);
  if (!found)
    return found.error();
  return identity;
}

PendingKey remembered_key(Cache& cache, Runtime& runtime, const std::string& identity,
                          const std::string& target) {
  return PendingKey(
      core_of(cache), runtime.backend(),
      key_name(cache.config(), runtime, identity, target, arguments_of(runtime).bytes()),
      key_builder(runtime), runtime.check_stamps_aside(), may_read_any_file(runtime));
}

} // namespace jitcache::detail
