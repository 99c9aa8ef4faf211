#pragma once
// A write transaction held through LMDB itself, as another program (or a store of another
// process, while it writes and syncs) holds LMDB's writer lock.

#include <lmdb.h>

#include <filesystem>

namespace jitcache::test {

/// Begins a write transaction on the LMDB environment in `dir` through LMDB alone; null when it
/// cannot be. For a child process, which ends with it (the environment is never closed).
inline MDB_txn* lmdb_write_transaction(const std::filesystem::path& dir) {
  MDB_env* env = nullptr;
  MDB_txn* txn = nullptr;
  if (mdb_env_create(&env) != MDB_SUCCESS || mdb_env_set_maxdbs(env, 8) != MDB_SUCCESS ||
      mdb_env_open(env, dir.c_str(), 0, 0600) != MDB_SUCCESS ||
      mdb_txn_begin(env, nullptr, 0, &txn) != MDB_SUCCESS)
    return nullptr;
  return txn;
}

} // namespace jitcache::test
