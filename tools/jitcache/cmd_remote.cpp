#include "tools/jitcache/commands.hpp"
#include "tools/jitcache/user_tier.hpp"

#include "core/support/clock.hpp"
#include "core/tiers/entry_codec.hpp"
#include "core/tiers/remote/remote_store.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace jitcache::cli {

using detail::LmdbStore;
using detail::parse_redis_urls;
using detail::RedisUrl;
using detail::RemoteStore;
using detail::Stopwatch;

namespace {

// The remote tiers of `config`, in lookup order (config.remote holds only URLs that parsed).
std::vector<std::shared_ptr<RemoteStore>> remotes_of(const Config& config) {
  std::vector<std::string> complaints;
  std::vector<std::shared_ptr<RemoteStore>> out;
  for (RedisUrl& url : parse_redis_urls(config.remote, complaints))
    out.push_back(std::make_shared<RemoteStore>(std::move(url), config.remote_key));
  return out;
}

bool wanted(const Store::Item& item, const std::string& backend) {
  return item.valid && (backend.empty() || item.backend == backend);
}

// What push or pull did with one remote.
struct Moved {
  std::uint64_t copied = 0, present = 0, skipped = 0, bytes = 0;
  std::optional<Error> error;
};

void emit_moved(const Output& out, const char* verb, const RemoteStore& remote,
                const Moved& moved) {
  nlohmann::json line = {
      {"remote", remote.url().display()}, {"copied", moved.copied}, {"present", moved.present},
      {"skipped", moved.skipped},         {"bytes", moved.bytes},   {"ok", !moved.error}};
  std::string text = remote.url().display() + ": " + verb + " " + std::to_string(moved.copied) +
                     " entries (" + format_size(moved.bytes) + "), " +
                     std::to_string(moved.present) + " already there, " +
                     std::to_string(moved.skipped) + " skipped";
  if (moved.error) {
    line["error"] = moved.error->message;
    text += "; failed: " + moved.error->message;
  }
  out.emit(line, text);
}

Moved push(LmdbStore& user, RemoteStore& remote, const std::string& backend) {
  Moved moved;
  std::vector<Digest> keys;
  if (auto listed = user.for_each([&](const Store::Item& item) {
        if (wanted(item, backend))
          keys.push_back(item.key);
      });
      !listed) {
    moved.error = listed.error();
    return moved;
  }
  for (const Digest& key : keys) {
    // Peeked: copying an entry to the remote is not a use of it here.
    std::optional<Entry> entry;
    auto read = user.peek(key, [&](const EntryView& view) { entry = detail::to_entry(view); });
    if (!read || !entry) {
      ++moved.skipped; // removed or damaged since it was listed
      continue;
    }
    auto ok = remote.put(key, *entry);
    if (!ok && ok.error().code == ErrorCode::store_full) {
      ++moved.skipped;
      continue;
    }
    if (!ok) {
      moved.error = ok.error();
      return moved;
    }
    ++moved.copied;
    moved.bytes += entry->payload.size();
  }
  return moved;
}

Moved pull(LmdbStore& user, RemoteStore& remote, const std::string& backend) {
  Moved moved;
  std::vector<Digest> keys;
  if (auto listed = remote.for_each([&](const Store::Item& item) {
        if (wanted(item, backend))
          keys.push_back(item.key);
        else if (!item.valid)
          ++moved.skipped; // damaged, or not signed with the key
      });
      !listed) {
    moved.error = listed.error();
    return moved;
  }
  for (const Digest& key : keys) {
    auto here = user.peek(key, [](const EntryView&) {});
    if (here && *here) {
      ++moved.present;
      continue;
    }
    auto entry = remote.get(key);
    if (!entry) {
      moved.error = entry.error();
      return moved;
    }
    if (!*entry) {
      ++moved.skipped;
      continue;
    }
    if (auto ok = user.put(key, **entry); !ok) {
      moved.error = ok.error();
      return moved;
    }
    ++moved.copied;
    moved.bytes += (*entry)->payload.size();
  }
  return moved;
}

} // namespace

nlohmann::json describe_remotes(const Config& config, std::string& text) {
  nlohmann::json remotes = nlohmann::json::array();
  for (const auto& remote : remotes_of(config)) {
    const Stopwatch clock;
    auto ok = remote->ping();
    const double ms = clock.ms();
    nlohmann::json line = {{"remote", remote->url().display()},
                           {"reachable", static_cast<bool>(ok)},
                           {"writable", remote->writable()},
                           {"signing", remote->signing()},
                           {"timeout_ms", remote->url().timeout.count()}};
    text += "remote " + remote->url().display() + ": ";
    if (ok) {
      line["ping_ms"] = ms;
      text +=
          "reachable (" + std::to_string(ms).substr(0, std::to_string(ms).find('.') + 3) + " ms)";
    } else {
      line["error"] = ok.error().message;
      text += "unreachable (" + ok.error().message + ")";
    }
    text += "; " + remote->signing() + "\n";
    remotes.push_back(line);
  }
  return remotes;
}

int run_remote(const Config& config, RemoteAction action, const std::string& backend,
               const Output& out) {
  if (!backend.empty() &&
      std::find(std::begin(k_backends), std::end(k_backends), backend) == std::end(k_backends))
    return usage_error("unknown backend '" + backend + "' (expected opencl, cuda or hip)");
  const auto remotes = remotes_of(config);
  if (remotes.empty()) {
    // JITCACHE_REMOTE set, and every remote in it off (a key asked for that cannot be used, or
    // no key and no unsigned=1): the configuration's warning says why, in this one error.
    auto set = config.variables.find("JITCACHE_REMOTE");
    if (set != config.variables.end() && !set->second.empty()) {
      std::string why;
      for (const std::string& warning : config.warnings)
        if (warning.rfind("JITCACHE_REMOTE", 0) == 0)
          why += (why.empty() ? "" : "; ") + warning;
      return fail(Error(ErrorCode::invalid_argument, "no remote tier is used: " + why));
    }
    return fail(Error(ErrorCode::invalid_argument, "no remote tier: set JITCACHE_REMOTE"));
  }
  if (action == RemoteAction::ping) {
    std::string text;
    const nlohmann::json lines = describe_remotes(config, text);
    bool all = true;
    std::size_t i = 0;
    for (const auto& line : lines) {
      all = all && line["reachable"].get<bool>();
      std::string one = text.substr(i, text.find('\n', i) - i);
      i = text.find('\n', i) + 1;
      out.emit(line, one);
    }
    return all ? 0 : 1;
  }
  Expected<std::shared_ptr<LmdbStore>> user = std::shared_ptr<LmdbStore>();
  if (action == RemoteAction::pull) {
    if (auto ok = may_change(config); !ok)
      return fail(ok.error());
    user = open_user_tier(config, true);
  } else {
    user = open_user_tier(config, false);
  }
  if (!user)
    return fail(user.error());
  bool failed = false;
  for (const auto& remote : remotes) {
    Moved moved;
    if (action == RemoteAction::push && !remote->writable())
      moved.error = Error(ErrorCode::read_only, "not written to (" + remote->signing() + ")");
    else if (*user)
      moved = action == RemoteAction::push ? push(**user, *remote, backend)
                                           : pull(**user, *remote, backend);
    failed = failed || moved.error;
    emit_moved(out, action == RemoteAction::push ? "pushed" : "pulled", *remote, moved);
  }
  return failed ? 1 : 0;
}

} // namespace jitcache::cli
