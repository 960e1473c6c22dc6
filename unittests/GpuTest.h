//===- GpuTest.h - Skipping GPU tests only where no GPU is ------*- C++ -*-===//
//
// A GPU test skips where the machine has no GPU, and fails where it has one
// (or FA_REQUIRE_GPU=1) but CUDA does not work: on the GPU machine a broken
// driver must not pass as a skipped test (fa::runtime::gpuRequired()).
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_GPUTEST_H
#define FA_UNITTESTS_GPUTEST_H

#include "fa/Runtime/Cuda.h"

#include "gtest/gtest.h"

/// Ends the test because CUDA is unavailable for `reason`: a failure where a
/// GPU must be used, a skip elsewhere.
#define FA_GPU_UNAVAILABLE(reason)                                             \
  do {                                                                         \
    if (::fa::runtime::gpuRequired())                                          \
      FAIL() << "a GPU is present (or FA_REQUIRE_GPU=1) but CUDA is "          \
                "unavailable: "                                                \
             << (reason);                                                      \
    GTEST_SKIP() << "no GPU: " << (reason);                                    \
  } while (false)

#endif // FA_UNITTESTS_GPUTEST_H
