#pragma once

namespace jitcache {

/// The library's version; part of every key, so an upgrade never serves an older build's binary.
inline constexpr const char* k_version = "0.1.0";

/// Version of the stored entry format; part of the user-tier path (JITCACHE_DIR/v<N>).
inline constexpr int k_format_version = 1;

} // namespace jitcache
