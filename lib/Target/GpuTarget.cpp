//===- GpuTarget.cpp - The GPU target table -------------------------------===//
//
// PTX versions are the first that accept the chip in LLVM 22's NVPTX backend
// and the instructions FA emits there (PTX 8.0 for sm_90's bulk copies and
// reductions, and sm_90a's wgmma); shared memory is CUDA's
// sharedMemPerBlockOptin for the chip.
//
//===----------------------------------------------------------------------===//

#include "fa/Target/GpuTarget.h"

#include <tuple>

using namespace fa::target;

namespace {

constexpr uint32_t operator|(Feature a, Feature b) {
  return uint32_t(a) | uint32_t(b);
}
constexpr uint32_t operator|(uint32_t a, Feature b) { return a | uint32_t(b); }

constexpr uint32_t kAmpere = Feature::CpAsync | Feature::MmaSync;
constexpr uint32_t kHopper =
    kAmpere | Feature::Tma | Feature::BulkCopy | Feature::Clusters;

constexpr int64_t kKiB = 1024;

// clang-format off
const GpuTarget kTargets[] = {
  // chip       major minor arch   ptx  shared       regs       features
  {"sm_80",     8, 0, false, 70, 163 * kKiB, 255, 65536, kAmpere},
  {"sm_86",     8, 6, false, 71,  99 * kKiB, 255, 65536, kAmpere},
  {"sm_87",     8, 7, false, 74, 163 * kKiB, 255, 65536, kAmpere},
  {"sm_89",     8, 9, false, 78,  99 * kKiB, 255, 65536, kAmpere},
  {"sm_90",     9, 0, false, 80, 227 * kKiB, 255, 65536, kHopper},
  {"sm_90a",    9, 0, true,  80, 227 * kKiB, 255, 65536,
   kHopper | Feature::Wgmma | Feature::SetMaxNReg},
  {"sm_100",   10, 0, false, 86, 227 * kKiB, 255, 65536, kHopper},
  {"sm_120",   12, 0, false, 87,  99 * kKiB, 255, 65536, kAmpere},
};
// clang-format on

} // namespace

std::string GpuTarget::ptxFeature() const {
  return "+ptx" + std::to_string(ptxVersion);
}

bool GpuTarget::runsOn(int deviceMajor, int deviceMinor) const {
  if (archSpecific)
    return deviceMajor == major && deviceMinor == minor;
  return deviceMajor > major || (deviceMajor == major && deviceMinor >= minor);
}

const GpuTarget *fa::target::lookupGpuTarget(std::string_view chip) {
  for (const GpuTarget &target : kTargets)
    if (target.chip == chip)
      return &target;
  return nullptr;
}

std::string fa::target::listGpuTargets() {
  std::string list;
  for (const GpuTarget &target : kTargets)
    list += (list.empty() ? "" : ", ") + std::string(target.chip);
  return list;
}

std::string_view fa::target::chipForDevice(int major, int minor) {
  const GpuTarget *best = nullptr;
  for (const GpuTarget &target : kTargets) {
    if (!target.runsOn(major, minor))
      continue;
    // Prefer the exact compute capability, then the arch-specific entry,
    // then the newest.
    auto rank = [&](const GpuTarget &t) {
      bool exact = t.major == major && t.minor == minor;
      return std::tuple(exact, t.archSpecific, t.major, t.minor);
    };
    if (!best || rank(target) > rank(*best))
      best = &target;
  }
  return best ? best->chip : std::string_view();
}
