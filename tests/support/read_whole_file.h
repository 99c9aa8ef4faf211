/* A C program's whole-file read, shared by the front-ends' test client (tests/interposers) and
 * their benchmark (bench/rtc). */
#pragma once

#include <stdio.h>
#include <stdlib.h>

/* The bytes of the file `path` and a NUL after them, in memory the caller frees; NULL when it
 * cannot be opened or read whole. */
static char* read_whole_file(const char* path) {
  FILE* in = fopen(path, "rb");
  if (!in)
    return NULL;
  char* text = NULL;
  long size = -1;
  if (fseek(in, 0, SEEK_END) == 0 && (size = ftell(in)) >= 0 && fseek(in, 0, SEEK_SET) == 0 &&
      (text = calloc((size_t)size + 1, 1)) && fread(text, 1, (size_t)size, in) != (size_t)size) {
    free(text);
    text = NULL;
  }
  fclose(in);
  return text;
}
