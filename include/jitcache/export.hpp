#pragma once

/// JITCACHE_EXPORT marks a declaration of the public API: the only symbols libjitcache.so
/// exports (everything else is built with hidden visibility).
#if defined(_WIN32)
#define JITCACHE_EXPORT
#else
#define JITCACHE_EXPORT __attribute__((visibility("default")))
#endif
