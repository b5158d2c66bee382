#pragma once
// What a fuzz target asserts: a broken property aborts with its text (libFuzzer saves the input).

#include <cstdio>
#include <cstdlib>

#define DDE_FUZZ_CHECK(cond)                                                           \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
