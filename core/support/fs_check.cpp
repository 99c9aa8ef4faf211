#include "core/support/fs_check.hpp"

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>

namespace jitcache::detail {

namespace fs = std::filesystem;

namespace {

struct NetworkType {
  unsigned long magic;
  const char* name;
};

// statfs f_type values (linux/magic.h and the vendors' headers) of filesystems that are shared
// between machines: LMDB's POSIX locks and shared memory map do not work across their clients.
constexpr NetworkType k_network_types[] = {
    {0x6969, "nfs"},        {0x517B, "smb"},       {0xFF534D42, "cifs"},  {0xFE534D42, "smb2"},
    {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"},  {0x00C36400, "ceph"},  {0x5346414F, "afs"},
    {0x6B414653, "afs"},    {0x73757245, "coda"},  {0x564C, "ncp"},       {0x01021997, "9p"},
    {0x19830326, "beegfs"}, {0xAAD7AAEA, "panfs"}, {0x20030528, "pvfs2"}, {0x01161970, "gfs2"},
    {0x7461636F, "ocfs2"},
};

} // namespace

std::optional<std::string> network_filesystem_name(long type) {
  // f_type is a signed long on some ABIs: compare the low 32 bits.
  const unsigned long magic = static_cast<unsigned long>(type) & 0xFFFFFFFFul;
  for (const NetworkType& t : k_network_types)
    if (t.magic == magic)
      return std::string(t.name);
  return std::nullopt;
}

Filesystem probe_filesystem(const fs::path& path) {
  Filesystem result;
  // statfs(2) fails on a path that does not exist: one call where it does (a stat first doubled
  // the calls of a request's directory watches), and a walk up to the nearest ancestor where not.
  struct statfs st {};
  fs::path p = path;
  while (::statfs(p.c_str(), &st) != 0) {
    if (p.empty() || p == p.parent_path())
      return result;
    p = p.parent_path();
  }
  result.type = static_cast<long>(st.f_type);
  if (auto name = network_filesystem_name(result.type)) {
    result.name = *name;
    result.network = true;
  }
  return result;
}

std::optional<std::string> foreign_directory_problem(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return std::nullopt;
  return foreign_directory_problem(st);
}

std::optional<std::string> foreign_directory_problem(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
           std::to_string(::geteuid()) + ")";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("writable by group or others (mode ") + mode + ")";
  }
  return std::nullopt;
}

} // namespace jitcache::detail
