# Finds the HIP runtime, hipRTC and comgr headers, and the HIP runtime library (Debian:
# libamdhip64-dev, which brings libamd-comgr-dev). Sets JITCACHE_HIP_FOUND and the imported target
# jitcache::hip_headers (headers only: the libraries are opened at run time with dlopen, so the
# library starts without them).
find_path(JITCACHE_HIP_INCLUDE_DIR hip/hiprtc.h PATHS /opt/rocm/include)
find_path(JITCACHE_COMGR_INCLUDE_DIR amd_comgr.h PATH_SUFFIXES amd_comgr PATHS /opt/rocm/include)
find_library(JITCACHE_HIP_LIBRARY amdhip64 PATHS /opt/rocm/lib)
if(JITCACHE_HIP_INCLUDE_DIR AND JITCACHE_COMGR_INCLUDE_DIR AND JITCACHE_HIP_LIBRARY)
  set(JITCACHE_HIP_FOUND TRUE)
  if(NOT TARGET jitcache::hip_headers)
    add_library(jitcache::hip_headers INTERFACE IMPORTED)
    set_target_properties(jitcache::hip_headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${JITCACHE_HIP_INCLUDE_DIR};${JITCACHE_COMGR_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "__HIP_PLATFORM_AMD__")
  endif()
else()
  set(JITCACHE_HIP_FOUND FALSE)
endif()
