#pragma once

#include <jitcache/expected.hpp>

#include <filesystem>
#include <memory>
#include <string_view>

namespace jitcache::detail {

/// A regular file mapped read-only into memory for the life of the object (packages are read in
/// place). Not copyable; share it through a shared_ptr. Thread-safe to read.
class MappedFile {
public:
  /// Maps the file at `path` (a symbolic link is followed: a packager may link a package into a
  /// folder). Errors (io_error, naming the path): it does not exist or cannot be opened (the
  /// system's reason), it is a directory or anything else that is not a regular file, it is
  /// empty, or the mapping fails.
  static Expected<std::shared_ptr<const MappedFile>> open(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The file's bytes, valid while this object lives. Another process can change or truncate
  /// the file meanwhile (a page past its new end raises SIGBUS): read them only inside
  /// fault::guarded() (open() installs its handler), and copy what must not change before it is
  /// checked (as PackageReader does).
  std::string_view bytes() const { return m_bytes; }

private:
  explicit MappedFile(std::string_view bytes) : m_bytes(bytes) {}
  std::string_view m_bytes;
};

} // namespace jitcache::detail
