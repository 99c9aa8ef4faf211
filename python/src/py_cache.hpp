#pragma once

#include <jitcache/cache.hpp>

#include <memory>

namespace jitcache::python {

/// jitcache.Cache: a jitcache::Cache that Python can close. Every call takes a reference to the
/// Cache (get()), so close() while another thread compiles only drops this object's reference:
/// that call finishes and the Cache is flushed and destroyed after it. Methods need the GIL, which
/// guards m_cache.
class PyCache {
public:
  explicit PyCache(Config config);

  /// The cache, for one call. Raises ValueError("... closed") once close() was called.
  std::shared_ptr<Cache> get() const;

  /// Finishes pending stores and releases the cache (the GIL is released meanwhile). A second
  /// call does nothing.
  void close();

  bool closed() const { return !m_cache; }

private:
  std::shared_ptr<Cache> m_cache;
};

} // namespace jitcache::python
