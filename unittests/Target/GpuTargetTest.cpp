//===- GpuTargetTest.cpp - The GPU target model ---------------------------===//

#include "fa/Target/GpuTarget.h"

#include "gtest/gtest.h"

using namespace fa::target;

namespace {

TEST(GpuTarget, Lookup) {
  const GpuTarget *hopper = lookupGpuTarget("sm_90a");
  ASSERT_NE(hopper, nullptr);
  EXPECT_EQ(hopper->ptxFeature(), "+ptx80");
  EXPECT_EQ(hopper->maxSharedBytesPerBlock, 227 * 1024);
  EXPECT_TRUE(hopper->has(Feature::Wgmma));
  EXPECT_TRUE(hopper->has(Feature::Tma));
  EXPECT_TRUE(hopper->has(Feature::SetMaxNReg));

  const GpuTarget *ampere = lookupGpuTarget("sm_80");
  ASSERT_NE(ampere, nullptr);
  EXPECT_EQ(ampere->ptxFeature(), "+ptx70");
  EXPECT_EQ(ampere->maxSharedBytesPerBlock, 163 * 1024);
  EXPECT_TRUE(ampere->has(Feature::MmaSync));
  EXPECT_FALSE(ampere->has(Feature::Wgmma));
  EXPECT_FALSE(ampere->has(Feature::BulkCopy));

  // Plain sm_90 has the bulk copies but not wgmma or setmaxnreg.
  const GpuTarget *sm90 = lookupGpuTarget("sm_90");
  ASSERT_NE(sm90, nullptr);
  EXPECT_TRUE(sm90->has(Feature::BulkCopy));
  EXPECT_FALSE(sm90->has(Feature::Wgmma));

  // Each chip starts from the PTX version that knows it.
  EXPECT_EQ(lookupGpuTarget("sm_89")->ptxFeature(), "+ptx78");
  EXPECT_EQ(lookupGpuTarget("sm_100")->ptxFeature(), "+ptx86");
  EXPECT_EQ(lookupGpuTarget("sm_75"), nullptr);
  EXPECT_EQ(lookupGpuTarget("sm_90b"), nullptr);
  EXPECT_EQ(lookupGpuTarget(""), nullptr);
  EXPECT_EQ(listGpuTargets(),
            "sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a, sm_100, sm_120");
}

TEST(GpuTarget, WhichDevicesLoadAKernel) {
  // PTX of a plain chip runs on any later compute capability...
  EXPECT_TRUE(lookupGpuTarget("sm_80")->runsOn(8, 0));
  EXPECT_TRUE(lookupGpuTarget("sm_80")->runsOn(8, 6));
  EXPECT_TRUE(lookupGpuTarget("sm_80")->runsOn(9, 0));
  EXPECT_FALSE(lookupGpuTarget("sm_86")->runsOn(8, 0));
  EXPECT_FALSE(lookupGpuTarget("sm_80")->runsOn(7, 5));
  // ... an architecture-specific one on its own only.
  EXPECT_TRUE(lookupGpuTarget("sm_90a")->runsOn(9, 0));
  EXPECT_FALSE(lookupGpuTarget("sm_90a")->runsOn(10, 0));
  EXPECT_FALSE(lookupGpuTarget("sm_90a")->runsOn(8, 9));
}

TEST(GpuTarget, ChipForDevice) {
  EXPECT_EQ(chipForDevice(8, 0), "sm_80");
  EXPECT_EQ(chipForDevice(8, 6), "sm_86");
  // The H100: the arch-specific entry, for wgmma.
  EXPECT_EQ(chipForDevice(9, 0), "sm_90a");
  EXPECT_EQ(chipForDevice(10, 0), "sm_100");
  // No entry of its own: the newest whose PTX it runs.
  EXPECT_EQ(chipForDevice(8, 8), "sm_87");
  EXPECT_EQ(chipForDevice(12, 1), "sm_120");
  EXPECT_EQ(chipForDevice(7, 5), "");
}

} // namespace
