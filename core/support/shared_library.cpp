#include "core/support/shared_library.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstring>

namespace jitcache::detail {

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

std::string loaded_library(const char* part) {
  struct Search {
    const char* part;
    std::string found;
  } search{part, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        auto* s = static_cast<Search*>(out);
        if (info->dlpi_name && std::strstr(info->dlpi_name, s->part)) {
          s->found = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &search);
  return search.found;
}

} // namespace jitcache::detail
