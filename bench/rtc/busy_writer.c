/* Keeps the writer lock of a user tier's LMDB environment busy, as another process's stores do:
 * holds a write transaction for HOLD_MS milliseconds at a time (a store whose write and sync take
 * that long: a large entry, a slow disk) and lets it go for 1 ms between. Runs until killed.
 *
 *   busy_writer DIR HOLD_MS      (DIR: the user tier's folder, JITCACHE_DIR/v1)
 *
 * Prints "holding" on one line once it first holds the lock. */
#define _POSIX_C_SOURCE 199309L
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: busy_writer DIR HOLD_MS\n");
    return 2;
  }
  const long hold_ms = atol(argv[2]);
  MDB_env* env = NULL;
  int rc = mdb_env_create(&env);
  if (rc == MDB_SUCCESS)
    rc = mdb_env_set_maxdbs(env, 8);
  if (rc == MDB_SUCCESS)
    rc = mdb_env_open(env, argv[1], 0, 0600);
  if (rc != MDB_SUCCESS) {
    fprintf(stderr, "busy_writer: %s: %s\n", argv[1], mdb_strerror(rc));
    return 1;
  }
  for (int first = 1;; first = 0) {
    MDB_txn* txn = NULL;
    if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != MDB_SUCCESS) {
      fprintf(stderr, "busy_writer: %s\n", mdb_strerror(rc));
      return 1;
    }
    if (first) {
      printf("holding\n");
      fflush(stdout);
    }
    sleep_ms(hold_ms);
    mdb_txn_abort(txn);
    sleep_ms(1);
  }
}
