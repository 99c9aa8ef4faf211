# Makes one package with the jitcache command-line tool, as a developer would: builds the kernel
# file into a scratch user tier, then exports what serves the target. Run by
# jitcache_make_package() (JitcacheMakePackage.cmake).
#
#   cmake -DCLI=<jitcache> -DWORK_DIR=<scratch dir> -DOUTPUT=<package> -DBACKEND=cuda|hip|opencl
#         [-DARCH=<sm_90|gfx90a>] [-DOPTIONS=<build options>] -DFILE=<kernel file>
#         -P make_package.cmake
#
# Without ARCH the package serves device 0 of BACKEND (OpenCL: PoCL here).
foreach(var CLI WORK_DIR OUTPUT BACKEND FILE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "make_package.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(ENV{JITCACHE_DIR} "${WORK_DIR}")
# The user tier on, whatever the environment says (POCL_KERNEL_CACHE=0 would turn it off).
set(ENV{JITCACHE_DISABLE} 0)
unset(ENV{JITCACHE_READONLY})
unset(ENV{JITCACHE_SYSTEM_PATH})
# Made as on a machine without a GPU: CUDA and HIP targets are compiled offline (NVRTC, hipRTC),
# and no device is visible to them.
set(ENV{CUDA_VISIBLE_DEVICES} "")
set(ENV{HIP_VISIBLE_DEVICES} "")

set(build_args --backend ${BACKEND})
set(export_args --backend ${BACKEND})
if(ARCH)
  list(APPEND build_args --arch ${ARCH})
  list(APPEND export_args --arch ${ARCH})
else()
  # Stored before the tool exits, so that export finds it.
  list(APPEND build_args --wait)
  list(APPEND export_args --device 0)
endif()
if(OPTIONS)
  list(APPEND build_args --options "${OPTIONS}")
endif()
run("${CLI}" build ${build_args} ${FILE})
run("${CLI}" export -o "${OUTPUT}" ${export_args})
file(REMOVE_RECURSE "${WORK_DIR}")
