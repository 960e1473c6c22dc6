//===- KernelAbiTest.cpp - The kernel ABI: text, checks, grid, buffer -----===//
//
// include/fa/Runtime/KernelAbi.h without a driver: the text round-trips and
// its parser rejects what is not an ABI, verifyKernelAbi, the folded grid
// (CUDA's 65535 limit on grid.y and grid.z) and the parameter buffer a call
// gives.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/KernelAbi.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

using namespace fa::runtime;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Every kind of parameter and machine type, and a tile grid.
KernelAbi sampleAbi() {
  KernelAbi abi;
  abi.name = "fa_forward_0";
  abi.grid = {GridAxis::tilesNq(64), GridAxis::hq(), GridAxis::batch()};
  abi.threads = 128;
  abi.sharedBytes = 81920;
  abi.params = {KernelParam::pointer(AbiTensor::Q),
                KernelParam::pointer(AbiTensor::DO),
                KernelParam::stride(AbiTensor::Q, 2),
                KernelParam::stride(AbiTensor::Lse, 1, MachineType::I32),
                KernelParam::ofSize(AbiSize::Nq),
                KernelParam::ofSize(AbiSize::Group),
                KernelParam::ofSize(AbiSize::Hq),
                KernelParam::ofSize(AbiSize::B, MachineType::I64),
                KernelParam::ofScalar(AbiScalar::ScaleLog2, MachineType::F32),
                KernelParam::ofScalar(AbiScalar::Seed, MachineType::I64),
                KernelParam::dqAccum(128),
                KernelParam::capturePointer(0),
                KernelParam::captureStride(0, 0),
                KernelParam::captureStride(0, 1),
                KernelParam::capturePointer(1),
                KernelParam::captureStride(1, 0)};
  return abi;
}

constexpr const char *kSampleText =
    "grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 81920, params = "
    "[q : ptr, do : ptr, stride(q, 2) : i64, stride(lse, 1) : i32, Nq : i32, "
    "group : i32, Hq : i32, B : i64, scale_log2 : f32, seed : i64, "
    "dq_accum(128) : ptr, capture0 : ptr, stride(capture0, 0) : i64, "
    "stride(capture0, 1) : i64, capture1 : ptr, stride(capture1, 0) : i64]";

TEST(KernelAbi, TextRoundTrips) {
  KernelAbi abi = sampleAbi();
  ASSERT_TRUE(verifyKernelAbi(abi).ok()) << verifyKernelAbi(abi).getMessage();
  EXPECT_EQ(printKernelAbi(abi), kSampleText);
  Expected<KernelAbi> parsed = parseKernelAbi(kSampleText);
  ASSERT_TRUE(parsed.ok()) << parsed.getMessage();
  parsed->name = abi.name;
  EXPECT_EQ(*parsed, abi);
  // Spaces between tokens are free.
  Expected<KernelAbi> spaced =
      parseKernelAbi("grid=[1,Hkv ,1],threads=32,shared=0,params=[Hkv:i32]");
  ASSERT_TRUE(spaced.ok()) << spaced.getMessage();
  EXPECT_EQ(printKernelAbi(*spaced), "grid = [1, Hkv, 1], threads = 32, "
                                     "shared = 0, params = [Hkv : i32]");
}

TEST(KernelAbi, ParserSaysWhatIsWrong) {
  struct Bad {
    std::string text, why;
  };
  std::string head = "grid = [1, 1, 1], threads = 128, shared = 0, params = ";
  for (const Bad &bad : {
           Bad{"", "expected 'grid'"},
           Bad{"grid = [Hq, 1, 1], threads = 1, shared = 0, params = []",
               "grid x must be tiles(Nq, R), tiles(Nk, R) or 1, got Hq"},
           Bad{"grid = [tiles(Nv, 64), 1, 1], threads = 1, shared = 0, "
               "params = []",
               "expected Nq or Nk"},
           Bad{"grid = [tiles(Nq, 0), 1, 1], threads = 1, shared = 0, "
               "params = []",
               "tiles need rows > 0"},
           Bad{"grid = [1, B, 1], threads = 1, shared = 0, params = [B : i32]",
               "grid y must be Hq, Hkv or 1, got B"},
           Bad{"grid = [1, Hq, 1], threads = 1, shared = 0, params = []",
               "grid y is Hq, which the kernel must take"},
           Bad{head + "[q : i64]", "a pointer is passed as ptr"},
           Bad{head + "[stride(lse, 3) : i64]", "lse has 3 dims"},
           Bad{head + "[stride(x, 0) : i64]", "unknown tensor"},
           Bad{head + "[Nq : f32]", "a size is passed as i32 or i64"},
           Bad{head + "[seed : f32]", "seed is passed as i64"},
           Bad{head + "[Nq : i32, Nq : i64]", "repeats parameter 0"},
           Bad{head + "[capture1 : ptr]", "capture 0 has no pointer"},
           Bad{head + "[capture0 : ptr]", "capture 0 needs the strides"},
           Bad{head + "[capture0 : ptr, stride(capture0, 1) : i64]",
               "capture 0 needs the strides"},
           Bad{head + "[dq_accum(0) : ptr]", "only dq_accum has a row length"},
           Bad{head + "[q : ptr] x", "expected the end"},
           Bad{head + "[q : ptr", "expected ']'"},
           Bad{head + "[nonsense : i32]", "unknown parameter 'nonsense'"},
           Bad{"grid = [1, 1, 1], threads = 0, shared = 0, params = []",
               "threads must be 1 to 1024"},
           Bad{"grid = [1, 1, 1], threads = 99999999999, shared = 0, "
               "params = []",
               "expected an integer"},
       }) {
    Expected<KernelAbi> parsed = parseKernelAbi(bad.text);
    ASSERT_TRUE(parsed.failed()) << bad.text;
    EXPECT_TRUE(contains(parsed.getMessage(), bad.why))
        << bad.text << ": " << parsed.getMessage();
  }
}

/// A call of B x Hq heads (Hkv = Hq), Nq and Nk rows.
KernelCall callOf(int64_t b, int64_t hq, int64_t nq, int64_t nk) {
  KernelCall call;
  call.batch = b;
  call.headsQ = call.headsKV = hq;
  call.seqQ = nq;
  call.seqKV = nk;
  return call;
}

TEST(KernelAbi, GridFoldsHeadsAndBatch) {
  GridRule forward{GridAxis::tilesNq(64), GridAxis::hq(), GridAxis::batch()};
  auto grid = [&](const GridRule &rule, const KernelCall &call) {
    Expected<GridSize> g = getLaunchGrid(rule, call);
    EXPECT_TRUE(g.ok()) << g.getMessage();
    return g.ok() ? *g : GridSize{};
  };
  auto same = [](GridSize g, uint32_t x, uint32_t y, uint32_t z) {
    return g.x == x && g.y == y && g.z == z;
  };
  // (tiles, H, B) while both fit; past 65535 y and z fold H x B, linear =
  // z * gridDim.y + y.
  EXPECT_TRUE(same(grid(forward, callOf(2, 8, 1000, 1000)), 16, 8, 2));
  EXPECT_TRUE(same(grid(forward, callOf(1, 65535, 64, 1)), 1, 65535, 1));
  EXPECT_TRUE(same(grid(forward, callOf(65535, 1, 64, 1)), 1, 1, 65535));
  EXPECT_TRUE(same(grid(forward, callOf(1, 65536, 64, 1)), 1, 65535, 2));
  // 70000 query heads: 1x70000x1 was CUDA_ERROR_INVALID_VALUE.
  EXPECT_TRUE(same(grid(forward, callOf(1, 70000, 100, 1)), 2, 65535, 2));
  EXPECT_TRUE(same(grid(forward, callOf(70000, 1, 100, 1)), 2, 65535, 2));
  EXPECT_TRUE(same(grid(forward, callOf(7, 10000, 1, 1)), 1, 10000, 7));
  // Folded, every linear index below H * B has a CTA, and no more than one
  // row of the grid is past it; a folded grid's y is never H (the kernels
  // tell the two apart by nctaid.y == H).
  for (int64_t hb : {65536, 131070, 131071, 1000000}) {
    GridSize g = grid(forward, callOf(1, hb, 1, 1));
    EXPECT_GE(uint64_t(g.y) * g.z, uint64_t(hb)) << hb;
    EXPECT_LT(uint64_t(g.y) * (g.z - 1), uint64_t(hb)) << hb;
    EXPECT_LE(g.y, kMaxGridYZ);
    EXPECT_LE(g.z, kMaxGridYZ);
    EXPECT_NE(int64_t(g.y), hb);
  }
  // dK/dV's grid: key tiles and Hkv.
  GridRule dkdv{GridAxis::tilesNk(128), GridAxis::hkv(), GridAxis::batch()};
  KernelCall gqa = callOf(3, 140000, 10, 300);
  gqa.headsKV = 70000;
  EXPECT_TRUE(same(grid(dkdv, gqa), 3, 65535, 4));
  gqa.headsKV = 20000;
  EXPECT_TRUE(same(grid(dkdv, gqa), 3, 20000, 3));
  // Broadcast axes are 1.
  GridRule dbias{GridAxis::one(), GridAxis::hq(), GridAxis::one()};
  EXPECT_TRUE(same(grid(dbias, callOf(5, 4, 0, 0)), 1, 4, 1));
  // Nothing to launch.
  EXPECT_TRUE(grid(forward, callOf(2, 8, 0, 10)).empty());
  EXPECT_TRUE(grid(forward, callOf(0, 8, 10, 10)).empty());
  // Past CUDA's limits: a clear error.
  Expected<GridSize> tooLong =
      getLaunchGrid(forward, callOf(1, 1, (int64_t(1) << 31) * 64, 1));
  ASSERT_TRUE(tooLong.failed());
  EXPECT_TRUE(contains(tooLong.getMessage(),
                       "grid x is tiles(Nq, 64) = 2147483648 CTAs, above "
                       "CUDA's limit of 2147483647"))
      << tooLong.getMessage();
  Expected<GridSize> tooMany =
      getLaunchGrid(forward, callOf(65536, 65535, 1, 1));
  ASSERT_TRUE(tooMany.failed());
  EXPECT_TRUE(contains(tooMany.getMessage(), "above CUDA's limit of 65535^2"))
      << tooMany.getMessage();
}

TEST(KernelAbi, ParamBufferWalksTheDescription) {
  KernelAbi abi = sampleAbi();
  KernelCall call = callOf(2, 8, 300, 200);
  call.headsKV = 2;
  call.set(AbiTensor::Q, 0x1000, {1, 2, 64});
  call[AbiTensor::DO].data = 0x2000;
  call[AbiTensor::Lse].strides[1] = 300;
  call[AbiTensor::DQAccum].data = 0x3000;
  call.scaleLog2 = 0.25f;
  call.seed = -5;
  call.captures = {{0x4000, {7, 8}}, {0x5000, {9}}};
  Expected<ParamBuffer> buffer = ParamBuffer::build(abi, call);
  ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
  ASSERT_EQ(buffer->size(), abi.params.size());
  uint32_t quarter;
  float q = 0.25f;
  std::memcpy(&quarter, &q, 4);
  const uint64_t expected[] = {
      0x1000,  0x2000,       64,     300,    300, 4, 8,      2,
      quarter, uint64_t(-5), 0x3000, 0x4000, 7,   8, 0x5000, 9};
  for (size_t i = 0; i < abi.params.size(); ++i) {
    EXPECT_EQ(buffer->getBits(i), expected[i])
        << i << ": " << printKernelParam(abi.params[i]);
    // cuLaunchKernel reads each from its pointer.
    uint64_t read = 0;
    std::memcpy(&read, buffer->getArgs()[i], getByteSize(abi.params[i].type));
    EXPECT_EQ(read, expected[i]) << i;
  }

  // What does not fit is an error that names the parameter.
  KernelCall big = call;
  big.seqQ = int64_t(1) << 31;
  Expected<ParamBuffer> overflow = ParamBuffer::build(abi, big);
  ASSERT_TRUE(overflow.failed());
  EXPECT_TRUE(contains(overflow.getMessage(),
                       "parameter 4 (Nq : i32): 2147483648 does not fit in "
                       "i32"))
      << overflow.getMessage();
  KernelCall ragged = call;
  ragged.headsKV = 3;
  EXPECT_TRUE(contains(ParamBuffer::build(abi, ragged).getMessage(),
                       "Hq = 8 is not a multiple of Hkv = 3"));
  // The captures must be the kernel's: their count and ranks.
  KernelCall fewer = call;
  fewer.captures.pop_back();
  Expected<ParamBuffer> missing = ParamBuffer::build(abi, fewer);
  ASSERT_TRUE(missing.failed());
  EXPECT_EQ(missing.getMessage(),
            "kernel fa_forward_0 takes 2 captures (ranks 2, 1), but the call "
            "passes 1 (ranks 2)");
  KernelCall reshaped = call;
  reshaped.captures[1].strides.push_back(1);
  EXPECT_TRUE(contains(ParamBuffer::build(abi, reshaped).getMessage(),
                       "takes 2 captures (ranks 2, 1), but the call passes 2 "
                       "(ranks 2, 2)"));
}

} // namespace
