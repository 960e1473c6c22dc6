//===- FakeCudaLaunches.h - What the stand-in driver launched ---*- C++ -*-===//
//
// The stand-in driver (FakeCuda.cpp) records every cuLaunchKernel: tests
// read the records through its C functions faFakeCudaLaunchCount,
// faFakeCudaGetLaunch and faFakeCudaClearLaunches (dlsym'ed from
// libfa-fake-cuda.so) to check the grid, the parameter buffer and the
// context of a launch. It also counts the calls of each entry point
// (faFakeCudaCallCount, faFakeCudaClearCalls), so that tests can check that
// a path allocates or synchronizes nothing. The arguments of its last
// cuTensorMapEncodeTiled are kept too (faFakeCudaGetTensorMapCall).
//
//===----------------------------------------------------------------------===//

#ifndef FA_UNITTESTS_RUNTIME_FAKECUDALAUNCHES_H
#define FA_UNITTESTS_RUNTIME_FAKECUDALAUNCHES_H

#include <cstdint>

inline constexpr int kFaFakeMaxParams = 256;

/// One launch: its kernel, the device whose context was current (the one the
/// kernel's module was loaded in: the stand-in refuses others), grid, block,
/// dynamic shared memory, and each parameter's bytes (the low `paramSizes[i]`
/// bytes of `params[i]`; of a larger parameter, a tensor map, its first 8).
struct FaFakeLaunch {
  char name[128];
  int context;
  unsigned grid[3], block[3], sharedBytes;
  int numParams;
  unsigned paramSizes[kFaFakeMaxParams];
  uint64_t params[kFaFakeMaxParams];
};

/// Launches recorded since the last clear.
using FaFakeCudaLaunchCountFn = int (*)();
/// Copies launch `i` into `launch`; 0 when there is none.
using FaFakeCudaGetLaunchFn = int (*)(int i, FaFakeLaunch *launch);
/// Forgets the recorded launches.
using FaFakeCudaClearLaunchesFn = void (*)();
/// Calls of entry point `name` ("cuMemAlloc_v2", "cuStreamSynchronize", ...)
/// since the last clear.
using FaFakeCudaCallCountFn = int (*)(const char *name);
/// Forgets the counted calls.
using FaFakeCudaClearCallsFn = void (*)();

/// The arguments of one cuTensorMapEncodeTiled (the first `rank`, at most 5,
/// of each array).
struct FaFakeTensorMapCall {
  uint64_t map;
  int dataType;
  unsigned rank;
  uint64_t globalAddress;
  uint64_t globalDim[5];
  uint64_t globalStrides[4];
  uint32_t boxDim[5];
  uint32_t elementStrides[5];
  int interleave, swizzle, l2Promotion, oobFill;
};
/// Copies the last cuTensorMapEncodeTiled's arguments into `call`; 0 when
/// there was none since the last clear (faFakeCudaClearCalls clears it).
using FaFakeCudaGetTensorMapCallFn = int (*)(FaFakeTensorMapCall *call);

#endif // FA_UNITTESTS_RUNTIME_FAKECUDALAUNCHES_H
