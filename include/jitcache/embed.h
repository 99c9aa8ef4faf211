#pragma once

/* Packages linked into a program (the embedded tier). The CMake function
 * jitcache_embed_packages(TARGET t PACKAGES a.jcpkg ...) links each package's bytes into `t`
 * (assembler .incbin, no C array through the compiler) together with a constructor that calls
 * jitcache_register_embedded_package() before main(); a Cache created later finds them without
 * touching the filesystem. Applications do not usually call it themselves, but may (for
 * package bytes they map or link in some other way). */

#include <jitcache/export.hpp>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Registers `size` bytes at `data` as the package named `name` (for messages and `jitcache
 *  packages`, e.g. "cuda-sm_90.jcpkg"). The bytes must stay valid and unchanged for the rest of
 *  the process (bytes linked into the program do); `name` is copied. The package is verified
 *  when a Cache opens its embedded tier, not here: damaged bytes are refused then, with one
 *  warning. Caches created before the call do not see the package. Registering the same bytes
 *  twice registers them once. A NULL `data` or `name`, or a `size` of 0, is ignored. Thread-safe;
 *  safe to call from a static constructor of any translation unit, before main(). Never fails. */
JITCACHE_EXPORT void jitcache_register_embedded_package(const char* name, const void* data,
                                                        size_t size);

#ifdef __cplusplus
}
#endif
