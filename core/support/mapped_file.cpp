#include "core/support/mapped_file.hpp"

#include "core/support/fault_guard.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace jitcache::detail {

Expected<std::shared_ptr<const MappedFile>> MappedFile::open(const std::filesystem::path& path) {
  const auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::io_error, path.string() + ": " + why);
  };
  // Non-blocking: a FIFO put where a package should be is refused, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return refuse(std::strerror(errno));
  struct stat st {};
  const bool stated = ::fstat(fd, &st) == 0;
  const int saved = errno;
  if (!stated || !S_ISREG(st.st_mode) || st.st_size == 0) {
    ::close(fd);
    if (!stated)
      return refuse(std::strerror(saved));
    return refuse(S_ISDIR(st.st_mode)   ? "is a directory, not a package file"
                  : S_ISREG(st.st_mode) ? "is empty"
                                        : "is not a regular file");
  }
  // Its bytes are read under the fault guard (another process can truncate the file under the
  // map: SIGBUS), which needs the handler in place.
  fault::install();
  const auto size = static_cast<std::size_t>(st.st_size);
  void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd); // the mapping keeps the file
  if (at == MAP_FAILED)
    return refuse(std::string("cannot be mapped: ") + std::strerror(map_errno));
  return std::shared_ptr<const MappedFile>(
      new MappedFile(std::string_view(static_cast<const char*>(at), size)));
}

MappedFile::~MappedFile() {
  ::munmap(const_cast<char*>(m_bytes.data()), m_bytes.size());
}

} // namespace jitcache::detail
