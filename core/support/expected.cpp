#include <jitcache/expected.hpp>

#include <string>

namespace jitcache {

namespace {
std::string describe(const char* access, const Error* held) {
  std::string text = std::string("jitcache: ") + access;
  if (held)
    text += std::string(" (") + to_string(held->code) + ": " + held->message + ")";
  return text;
}
} // namespace

BadExpectedAccess::BadExpectedAccess(const char* access, const Error* held)
    : std::logic_error(describe(access, held)) {}

// Out of line: the key function, so the vtable and type info live in the library once.
BadExpectedAccess::~BadExpectedAccess() = default;

} // namespace jitcache
