#include "core/support/current_directory.hpp"

#include <unistd.h>

namespace jitcache::detail {

CurrentDirectory::CurrentDirectory() {
  if (!::getcwd(m_path, sizeof m_path))
    m_path[0] = '\0';
}

} // namespace jitcache::detail
