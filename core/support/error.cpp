#include <jitcache/error.hpp>

namespace jitcache {

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
  case ErrorCode::invalid_argument:
    return "invalid_argument";
  case ErrorCode::compile_failed:
    return "compile_failed";
  case ErrorCode::load_failed:
    return "load_failed";
  case ErrorCode::runtime_error:
    return "runtime_error";
  case ErrorCode::runtime_missing:
    return "runtime_missing";
  case ErrorCode::no_device:
    return "no_device";
  case ErrorCode::unsupported:
    return "unsupported";
  case ErrorCode::io_error:
    return "io_error";
  case ErrorCode::store_full:
    return "store_full";
  case ErrorCode::read_only:
    return "read_only";
  case ErrorCode::corrupt:
    return "corrupt";
  }
  return "unknown";
}

} // namespace jitcache
