// The OpenCL functions the OpenCL backend (backends/opencl) calls, defined here with hidden
// visibility so that the backend linked into the layer binds to them rather than to the ICD
// loader's: its programs go straight to the driver below the layer, never through the layer's
// own dispatch (which would wrap them and serve them a second time). A function the backend
// starts calling fails the layer's link (-Wl,--no-undefined) until it is added here.

#include "interposers/opencl_layer/next_dispatch.hpp"

namespace jitcache::opencl_layer {
const cl_icd_dispatch* g_next = nullptr;
} // namespace jitcache::opencl_layer

using jitcache::opencl_layer::g_next;

extern "C" {

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id platform,
                                                  cl_platform_info param_name,
                                                  size_t param_value_size, void* param_value,
                                                  size_t* param_value_size_ret) {
  return g_next->clGetPlatformInfo(platform, param_name, param_value_size, param_value,
                                   param_value_size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetDeviceInfo(cl_device_id device, cl_device_info param_name,
                                                size_t param_value_size, void* param_value,
                                                size_t* param_value_size_ret) {
  return g_next->clGetDeviceInfo(device, param_name, param_value_size, param_value,
                                 param_value_size_ret);
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count,
                                                              const char** strings,
                                                              const size_t* lengths,
                                                              cl_int* errcode_ret) {
  return g_next->clCreateProgramWithSource(context, count, strings, lengths, errcode_ret);
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(
    cl_context context, cl_uint num_devices, const cl_device_id* device_list, const size_t* lengths,
    const unsigned char** binaries, cl_int* binary_status, cl_int* errcode_ret) {
  return g_next->clCreateProgramWithBinary(context, num_devices, device_list, lengths, binaries,
                                           binary_status, errcode_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices,
                                               const cl_device_id* device_list, const char* options,
                                               void(CL_CALLBACK* pfn_notify)(cl_program, void*),
                                               void* user_data) {
  return g_next->clBuildProgram(program, num_devices, device_list, options, pfn_notify, user_data);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramInfo(cl_program program, cl_program_info param_name,
                                                 size_t param_value_size, void* param_value,
                                                 size_t* param_value_size_ret) {
  return g_next->clGetProgramInfo(program, param_name, param_value_size, param_value,
                                  param_value_size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                                      cl_program_build_info param_name,
                                                      size_t param_value_size, void* param_value,
                                                      size_t* param_value_size_ret) {
  return g_next->clGetProgramBuildInfo(program, device, param_name, param_value_size, param_value,
                                       param_value_size_ret);
}

CL_API_ENTRY cl_int CL_API_CALL clRetainProgram(cl_program program) {
  return g_next->clRetainProgram(program);
}

CL_API_ENTRY cl_int CL_API_CALL clReleaseProgram(cl_program program) {
  return g_next->clReleaseProgram(program);
}

} // extern "C"
