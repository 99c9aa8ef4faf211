#include "interposers/rtc/real_library.hpp"

#include "core/support/shared_library.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <memory>
#include <optional>

namespace jitcache::rtc {

namespace {

// Any address inside the front-end's own library.
void own_symbol() {}

struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const FileId& other) const {
    return device == other.device && inode == other.inode;
  }
};

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The directories the dynamic loader searches for a dlopen from this library (or program), in
// its order.
std::vector<std::string> loader_dirs() {
  std::vector<std::string> dirs;
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&own_symbol), &info) || !info.dli_fname)
    return dirs;
  void* self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (!self) // linked into the program itself (the command-line tool): the program's search
    self = dlopen(nullptr, RTLD_LAZY);
  if (!self)
    return dirs;
  Dl_serinfo size{};
  if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && size.dls_size >= sizeof(Dl_serinfo)) {
    std::unique_ptr<char[]> buffer(new char[size.dls_size]);
    auto* list = reinterpret_cast<Dl_serinfo*>(buffer.get());
    *list = size;
    if (dlinfo(self, RTLD_DI_SERINFO, list) == 0)
      for (unsigned i = 0; i < list->dls_cnt; ++i)
        dirs.emplace_back(list->dls_serpath[i].dls_name);
  }
  dlclose(self);
  return dirs;
}

} // namespace

Expected<RealLibrary> open_real_library(const std::vector<std::string>& sonames,
                                        const std::vector<std::string>& dirs, const char* symbol) {
  const std::string self = detail::library_file(reinterpret_cast<const void*>(&own_symbol)).path;
  const auto own = file_id(self);
  std::vector<std::string> search = loader_dirs();
  search.insert(search.end(), dirs.begin(), dirs.end());
  std::string tried;
  for (const std::string& dir : search)
    for (const std::string& soname : sonames) {
      const std::string path = dir + "/" + soname;
      const auto id = file_id(path);
      if (!id || (own && *id == *own))
        continue;
      tried += (tried.empty() ? "" : ", ") + path;
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle)
        continue;
      void* defined = dlsym(handle, symbol);
      const std::string file = defined ? detail::library_file(defined).path : std::string();
      if (file.empty() || file == self) { // not the runtime, or a copy of the front-end
        dlclose(handle);
        continue;
      }
      return RealLibrary{handle, file};
    }
  return Error(ErrorCode::runtime_missing, "the real runtime could not be opened (tried " +
                                               (tried.empty() ? "none" : tried) + ")");
}

} // namespace jitcache::rtc
