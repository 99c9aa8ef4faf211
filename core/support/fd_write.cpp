#include "core/support/fd_write.hpp"

#include <cerrno>
#include <cstring>

#include <unistd.h>

namespace jitcache::detail {

Expected<void> write_all(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Error(ErrorCode::io_error, std::strerror(n == 0 ? ENOSPC : errno));
    done += static_cast<std::size_t>(n);
  }
  return {};
}

} // namespace jitcache::detail
