# What a program using jitcache::jitcache needs besides the library: the SDK headers that the
# public headers of each backend built include (opencl.hpp: CL/cl.h; cuda.hpp: cuda.h; hip.hpp:
# hip/hip_runtime_api.h). Each is named only if it exists where the consumer is configured, so
# find_package(jitcache COMPONENTS opencl) needs no CUDA or HIP SDK even where they were built
# (jitcacheConfig.cmake finds the SDKs of the components asked for).
target_link_libraries(jitcache INTERFACE Threads::Threads)
set(_jitcache_sdk_opencl OpenCL::OpenCL)
set(_jitcache_sdk_cuda CUDA::toolkit)
set(_jitcache_sdk_hip jitcache::hip_headers)
set(JITCACHE_BUILT_COMPONENTS "")
foreach(backend opencl cuda hip)
  string(TOUPPER ${backend} upper)
  if(JITCACHE_HAVE_${upper})
    list(APPEND JITCACHE_BUILT_COMPONENTS ${backend})
    target_link_libraries(jitcache INTERFACE "$<TARGET_NAME_IF_EXISTS:${_jitcache_sdk_${backend}}>")
  endif()
endforeach()
