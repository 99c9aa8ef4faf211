#include "core/shared_library.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace jitcache {

void* SymbolLoader::lookup(const char* name) const {
  return dlsym(m_library, name);
}

LibraryFile library_file(const void* symbol) {
  LibraryFile file;
  Dl_info info{};
  if (!dladdr(symbol, &info) || !info.dli_fname)
    return file;
  char resolved[PATH_MAX];
  file.path = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
  file.name = file.path.substr(file.path.rfind('/') + 1);
  struct stat st {};
  if (::stat(file.path.c_str(), &st) == 0)
    file.bytes = static_cast<std::uint64_t>(st.st_size);
  return file;
}

} // namespace jitcache
