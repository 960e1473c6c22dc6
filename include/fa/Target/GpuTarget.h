//===- GpuTarget.h - What FA knows about each GPU ---------------*- C++ -*-===//
//
// The GPU target model: every decision that depends on the chip (the PTX ISA
// version to emit, the shared memory a CTA may use, which instruction
// families exist, which devices can load a kernel) reads one entry of this
// table instead of comparing chip strings. A new chip is one entry here plus
// the lowerings of the features it adds.
//
// No MLIR or LLVM types: the runtime, the C++ API and the tools use it too.
//
//===----------------------------------------------------------------------===//

#ifndef FA_TARGET_GPUTARGET_H
#define FA_TARGET_GPUTARGET_H

#include <cstdint>
#include <string>
#include <string_view>

namespace fa::target {

/// Instruction families and hardware units a kernel may use.
enum class Feature : uint32_t {
  /// cp.async (global -> shared, sm_80+).
  CpAsync = 1u << 0,
  /// mma.sync with ldmatrix (sm_80+).
  MmaSync = 1u << 1,
  /// Warpgroup MMA (wgmma.mma_async; sm_90a only).
  Wgmma = 1u << 2,
  /// The tensor memory accelerator (cp.async.bulk.tensor) and mbarrier
  /// transaction counts (sm_90+).
  Tma = 1u << 3,
  /// Bulk copies and reductions without a tensor map (cp.async.bulk,
  /// cp.reduce.async.bulk; sm_90+).
  BulkCopy = 1u << 4,
  /// setmaxnreg (register reallocation between warpgroups; sm_90a).
  SetMaxNReg = 1u << 5,
  /// Thread block clusters and distributed shared memory (sm_90+).
  Clusters = 1u << 6,
  /// Fifth-generation tensor cores and tensor memory (tcgen05; sm_100a).
  Tcgen05 = 1u << 7,
};

/// One GPU, as FA compiles for it.
struct GpuTarget {
  /// The chip as NVPTX and the driver name it: "sm_80", "sm_90a", ...
  std::string_view chip;
  /// Compute capability, major and minor.
  int major = 0, minor = 0;
  /// Architecture-specific ('a'): the kernel runs on exactly this compute
  /// capability; otherwise its PTX runs on any later one.
  bool archSpecific = false;
  /// The PTX ISA version to emit, times 10 (80 for PTX 8.0): the lowest one
  /// that knows the chip and the features FA uses on it.
  int ptxVersion = 0;
  /// The most dynamic shared memory one CTA may use (the opt-in limit).
  int64_t maxSharedBytesPerBlock = 0;
  /// Registers per thread and per SM.
  int maxRegistersPerThread = 255;
  int registersPerSM = 65536;
  uint32_t features = 0;

  bool has(Feature f) const { return (features & uint32_t(f)) != 0; }
  /// The NVPTX feature string of the PTX version: "+ptx80".
  std::string ptxFeature() const;
  /// Whether a kernel compiled for this target loads on a device of compute
  /// capability `deviceMajor`.`deviceMinor`.
  bool runsOn(int deviceMajor, int deviceMinor) const;
};

/// The entry of `chip`, or null when FA does not know it.
const GpuTarget *lookupGpuTarget(std::string_view chip);

/// The chips FA compiles for, for messages: "sm_80, sm_86, ...".
std::string listGpuTargets();

/// The chip to compile for on a device of compute capability major.minor:
/// its architecture-specific entry where FA has one (sm_90a on an H100),
/// else its own, else the newest one whose PTX it runs; empty when none.
std::string_view chipForDevice(int major, int minor);

} // namespace fa::target

#endif // FA_TARGET_GPUTARGET_H
