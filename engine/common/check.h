#pragma once
// SPARROW_CHECK: a broken invariant (a programmer error, never outside input) stops the process
// loudly with file and line. Outside input is reported through Status instead.
#include <cstdio>
#include <cstdlib>

#define SPARROW_CHECK(cond)                                                             \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
