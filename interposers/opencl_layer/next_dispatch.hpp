#pragma once

#include <CL/cl_icd.h>

namespace jitcache::opencl_layer {

/// The dispatch table of what is below the layer (the next layer, or the loader's forwarders to
/// the driver), as clInitLayer received it; null before. Every call the layer makes to OpenCL
/// goes through it, including those of the OpenCL backend linked into the layer
/// (next_dispatch.cpp defines the OpenCL functions it calls), so that nothing jitcache does
/// itself passes through the layer again.
extern const cl_icd_dispatch* g_next;

} // namespace jitcache::opencl_layer
