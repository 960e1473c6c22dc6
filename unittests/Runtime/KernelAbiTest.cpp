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

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

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
               "grid x must be tiles(Nq, R), tiles(Nk, R), persistent(Nq, R, "
               "C) "
               "or 1, got Hq"},
           Bad{"grid = [tiles(Nv, 64), 1, 1], threads = 1, shared = 0, "
               "params = []",
               "expected Nq or Nk"},
           Bad{"grid = [tiles(Nq, 0), 1, 1], threads = 1, shared = 0, "
               "params = []",
               "tiles need rows > 0"},
           Bad{"grid = [1, B, 1], threads = 1, shared = 0, params = [B : i32]",
               "grid y must be Hq, Hkv, tiles(Nk, R) or 1, got B"},
           Bad{"grid = [1, Hq, 1], threads = 1, shared = 0, params = []",
               "grid y is Hq, which the kernel must take"},
           Bad{"grid = [1, tiles(Nk, 0), 1], threads = 1, shared = 0, "
               "params = []",
               "grid y: tiles need rows > 0"},
           Bad{"grid = [1, 1, tiles(Nk, 128)], threads = 1, shared = 0, "
               "params = []",
               "grid z must be B or 1, got tiles(Nk, 128)"},
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
  // A key-range kernel's: query tiles and key chunks, folded into z past
  // 65535 chunks (its chunk is z * gridDim.y + y).
  GridRule ranges{GridAxis::tilesNq(128), GridAxis::tilesNk(128),
                  GridAxis::one()};
  EXPECT_TRUE(same(grid(ranges, callOf(8, 16, 300, 500)), 3, 4, 1));
  EXPECT_TRUE(same(grid(ranges, callOf(1, 1, 128, 128 * 70000)), 1, 65535, 2));
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

TEST(KernelAbi, PersistentGridFillsTheSMs) {
  // Text, parse and checks.
  Expected<KernelAbi> abi =
      parseKernelAbi("grid = [persistent(Nq, 128, 2), 1, 1], threads = 384, "
                     "shared = 0, params = [Hq : i32, B : i32]");
  ASSERT_TRUE(abi.ok()) << abi.getMessage();
  EXPECT_EQ(abi->grid.x, GridAxis::persistent(128, 2));
  EXPECT_EQ(printKernelAbi(*abi), "grid = [persistent(Nq, 128, 2), 1, 1], "
                                  "threads = 384, shared = 0, params = [Hq : "
                                  "i32, B : i32]");
  struct Bad {
    const char *text, *error;
  } bad[] = {
      {"grid = [persistent(Nq, 128, 1), Hq, 1], threads = 384, shared = 0, "
       "params = [Hq : i32, B : i32]",
       "grid y and z of a persistent grid must be 1"},
      {"grid = [persistent(Nq, 128, 1), 1, 1], threads = 384, shared = 0, "
       "params = [Hq : i32]",
       "grid x is persistent, which needs B as a parameter"},
      {"grid = [persistent(Nq, 128, 0), 1, 1], threads = 384, shared = 0, "
       "params = [Hq : i32, B : i32]",
       "a persistent grid needs C > 0 CTAs an SM"},
      {"grid = [persistent(Nk, 128, 1), 1, 1], threads = 384, shared = 0, "
       "params = []",
       "expected 'Nq'"},
  };
  for (const Bad &b : bad) {
    Expected<KernelAbi> parsed = parseKernelAbi(b.text);
    ASSERT_TRUE(parsed.failed()) << b.text;
    EXPECT_TRUE(contains(parsed.getMessage(), b.error)) << parsed.getMessage();
  }

  // The launch: min(items, C x SMs) CTAs; every item where the SMs are not
  // known; at most the call's persistentCtas where it sets them.
  GridRule rule{GridAxis::persistent(128, 1), GridAxis::one(), GridAxis::one()};
  auto x = [&](const KernelCall &call, uint32_t sms) -> int64_t {
    Expected<GridSize> g = getLaunchGrid(rule, call, sms);
    EXPECT_TRUE(g.ok()) << g.getMessage();
    return g.ok() ? (g->empty() ? 0 : int64_t(g->x)) : -1;
  };
  // 8 tiles x 16 heads x 4 batches = 512 items.
  KernelCall call = callOf(4, 16, 1000, 777);
  EXPECT_EQ(x(call, 132), 132);
  EXPECT_EQ(x(call, 0), 512);
  EXPECT_EQ(x(callOf(1, 2, 129, 1), 132), 4);
  GridRule two = rule;
  two.x.ctasPerSM = 2;
  Expected<GridSize> g2 = getLaunchGrid(two, call, 132);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->x, 264u);
  EXPECT_EQ(g2->y, 1u);
  EXPECT_EQ(g2->z, 1u);
  call.persistentCtas = 100;
  EXPECT_EQ(x(call, 132), 100);
  call.persistentCtas = 100000;
  EXPECT_EQ(x(call, 132), 512);
  // No items: nothing to launch; more than 2^31 - 1: an error naming them.
  EXPECT_EQ(x(callOf(4, 16, 0, 777), 132), 0);
  Expected<GridSize> tooMany =
      getLaunchGrid(rule, callOf(65536, 65536, 128, 1), 132);
  ASSERT_TRUE(tooMany.failed());
  EXPECT_TRUE(contains(tooMany.getMessage(),
                       "the persistent kernel's work items, tiles(Nq, 128) * "
                       "Hq * B = 1 * 65536 * 65536, exceed 2^31 - 1"))
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

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

TEST(KernelAbi, TensorMapParams) {
  KernelParam map = KernelParam::tensorMap(AbiTensor::K, 128, 8);
  EXPECT_EQ(map.kind, KernelParam::Kind::TensorMap);
  EXPECT_EQ(map.type, MachineType::TensorMap);
  EXPECT_EQ(map.tensor, AbiTensor::K);
  EXPECT_EQ(map.dim, 128u);
  EXPECT_EQ(map.boxRows, 8u);
  EXPECT_EQ(getByteSize(MachineType::TensorMap), 128u);
  EXPECT_STREQ(getName(MachineType::TensorMap), "tmap");
  EXPECT_EQ(printKernelParam(map), "tensor_map(k, 128, 8) : tmap");
  // The same value: the tensor, its columns and its box rows.
  EXPECT_TRUE(map.sameValue(KernelParam::tensorMap(AbiTensor::K, 128, 8)));
  EXPECT_FALSE(map.sameValue(KernelParam::tensorMap(AbiTensor::V, 128, 8)));
  EXPECT_FALSE(map.sameValue(KernelParam::tensorMap(AbiTensor::K, 64, 8)));
  EXPECT_FALSE(map.sameValue(KernelParam::tensorMap(AbiTensor::K, 128, 16)));
  EXPECT_FALSE(map.sameValue(KernelParam::pointer(AbiTensor::K)));

  KernelAbi abi;
  abi.name = "fa_forward_tma";
  abi.grid = {GridAxis::tilesNq(128), GridAxis::hq(), GridAxis::batch()};
  abi.threads = 384;
  abi.sharedBytes = 196608;
  abi.params = {KernelParam::tensorMap(AbiTensor::Q, 128, 128),
                map,
                KernelParam::tensorMap(AbiTensor::V, 128, 8),
                KernelParam::tensorMap(AbiTensor::K, 128, 64),
                KernelParam::tensorMap(AbiTensor::DV, 16384, 256),
                KernelParam::pointer(AbiTensor::K),
                KernelParam::ofSize(AbiSize::Hq),
                KernelParam::ofSize(AbiSize::B)};
  ASSERT_TRUE(verifyKernelAbi(abi).ok()) << verifyKernelAbi(abi).getMessage();
  const char *text =
      "grid = [tiles(Nq, 128), Hq, B], threads = 384, shared = 196608, "
      "params = [tensor_map(q, 128, 128) : tmap, tensor_map(k, 128, 8) : "
      "tmap, tensor_map(v, 128, 8) : tmap, tensor_map(k, 128, 64) : tmap, "
      "tensor_map(dv, 16384, 256) : tmap, k : ptr, Hq : i32, B : i32]";
  EXPECT_EQ(printKernelAbi(abi), text);
  Expected<KernelAbi> parsed = parseKernelAbi(text);
  ASSERT_TRUE(parsed.ok()) << parsed.getMessage();
  parsed->name = abi.name;
  EXPECT_EQ(*parsed, abi);
  Expected<KernelAbi> spaced = parseKernelAbi(
      "grid=[1,1,1],threads=1,shared=0,params=[tensor_map( do ,64,1 ):tmap]");
  ASSERT_TRUE(spaced.ok()) << spaced.getMessage();
  ASSERT_EQ(spaced->params.size(), 1u);
  EXPECT_EQ(spaced->params[0], KernelParam::tensorMap(AbiTensor::DO, 64, 1));

  struct Bad {
    std::string params, why;
  };
  std::string head = "grid = [1, 1, 1], threads = 128, shared = 0, params = ";
  for (const Bad &bad : {
           // The text.
           Bad{"[tensor_map(x, 128, 8) : tmap]",
               "unknown tensor in tensor_map(...)"},
           Bad{"[tensor_map(k, 128) : tmap]", "expected ','"},
           Bad{"[tensor_map k, 128, 8) : tmap]", "expected '('"},
           Bad{"[tensor_map(k, 128, 8 : tmap]", "expected ')'"},
           Bad{"[tensor_map(k, 128, -8) : tmap]", "expected an integer"},
           Bad{"[tensor_map(k, 128, 8) : tmap8]",
               "unknown machine type 'tmap8'"},
           // The checks.
           Bad{"[tensor_map(lse, 128, 8) : tmap]",
               "parameter 0 (tensor_map(lse, 128, 8) : tmap): a tensor map "
               "is of q, k, v, o, do, dq, dk, dv or bias"},
           Bad{"[tensor_map(bias, 128, 8) : tmap]",
               "parameter 0 (tensor_map(bias, 128, 8) : tmap): a bias's "
               "tensor map has boxes of 32 or 64 columns (128 bytes), got "
               "128"},
           Bad{"[tensor_map(dq_accum, 128, 8) : tmap]",
               "a tensor map is of q, k, v, o, do, dq, dk, dv or bias"},
           Bad{"[tensor_map(capture0, 128, 8) : tmap]",
               "a tensor map is of q, k, v, o, do, dq, dk, dv or bias"},
           Bad{"[tensor_map(k, 92, 8) : tmap]",
               "parameter 0 (tensor_map(k, 92, 8) : tmap): a tensor map's "
               "columns must be a positive multiple of 8, at most 16384, "
               "got 92"},
           Bad{"[tensor_map(k, 0, 8) : tmap]",
               "columns must be a positive multiple of 8, at most 16384, "
               "got 0"},
           Bad{"[tensor_map(k, 16448, 8) : tmap]",
               "columns must be a positive multiple of 8, at most 16384, "
               "got 16448"},
           Bad{"[tensor_map(k, 128, 0) : tmap]",
               "parameter 0 (tensor_map(k, 128, 0) : tmap): a tensor map's "
               "box rows must be 1 to 256, got 0"},
           Bad{"[tensor_map(k, 128, 257) : tmap]",
               "a tensor map's box rows must be 1 to 256, got 257"},
           Bad{"[tensor_map(k, 128, 8) : ptr]",
               "parameter 0 (tensor_map(k, 128, 8) : ptr): a tensor map is "
               "passed as tmap"},
           Bad{"[tensor_map(k, 128, 8) : i64]",
               "a tensor map is passed as tmap"},
           // tmap is for tensor maps only.
           Bad{"[k : tmap]", "parameter 0 (k : tmap): a pointer is passed as "
                             "ptr"},
           Bad{"[stride(k, 2) : tmap]", "a stride is passed as i64 or i32"},
           Bad{"[Nk : tmap]", "a size is passed as i32 or i64"},
           Bad{"[scale : tmap]", "scale is passed as f32"},
           Bad{"[tensor_map(k, 128, 8) : tmap, q : ptr, "
               "tensor_map(k, 128, 8) : tmap]",
               "parameter 2 (tensor_map(k, 128, 8) : tmap) repeats parameter "
               "0"},
       }) {
    Expected<KernelAbi> parsed = parseKernelAbi(head + bad.params);
    ASSERT_TRUE(parsed.failed()) << bad.params;
    EXPECT_TRUE(contains(parsed.getMessage(), bad.why))
        << bad.params << ": " << parsed.getMessage();
  }
  // A pointer typed tmap, built directly: the same check.
  KernelAbi wrong;
  wrong.threads = 1;
  wrong.params = {KernelParam::pointer(AbiTensor::K)};
  wrong.params[0].type = MachineType::TensorMap;
  EXPECT_EQ(verifyKernelAbi(wrong).getMessage(),
            "kernel ABI: parameter 0 (k : tmap): a pointer is passed as ptr");
}

/// B = 2, Hq = 8, Hkv = 2, Nq = 300, Nk = 200, D = 128: q in [B, N, H, D]
/// order (strides not those of [B, H, N, D]), k with rows padded to 136.
KernelCall tensorMapCall() {
  KernelCall call = callOf(2, 8, 300, 200);
  call.headsKV = 2;
  call.set(AbiTensor::Q, 0x10000, {300 * 8 * 128, 128, 8 * 128});
  call.set(AbiTensor::K, 0x20000, {2 * 200 * 136, 200 * 136, 136});
  return call;
}

void expectRequest(const TensorMapRequest &r, uint64_t data,
                   std::initializer_list<uint64_t> dims,
                   std::initializer_list<uint64_t> strides,
                   std::initializer_list<uint32_t> box) {
  EXPECT_EQ(r.data, data);
  EXPECT_EQ(std::vector<uint64_t>(r.dims, r.dims + 5),
            std::vector<uint64_t>(dims));
  EXPECT_EQ(std::vector<uint64_t>(r.strides, r.strides + 4),
            std::vector<uint64_t>(strides));
  EXPECT_EQ(std::vector<uint32_t>(r.box, r.box + 5),
            std::vector<uint32_t>(box));
}

/// `param`'s request for `call`, expected to succeed with these fields.
void expectRequest(const KernelParam &param, const KernelCall &call,
                   uint64_t data, std::initializer_list<uint64_t> dims,
                   std::initializer_list<uint64_t> strides,
                   std::initializer_list<uint32_t> box) {
  Expected<TensorMapRequest> r = getTensorMapRequest(param, call);
  ASSERT_TRUE(r.ok()) << r.getMessage();
  expectRequest(*r, data, dims, strides, box);
}

TEST(KernelAbi, TensorMapRequests) {
  KernelCall call = tensorMapCall();
  // q: (64, Nq, D/64, Hq, B); byte strides (stride 2, 128, stride 1,
  // stride 0) * 2.
  expectRequest(KernelParam::tensorMap(AbiTensor::Q, 128, 64), call, 0x10000,
                {64, 300, 2, 8, 2}, {2048, 128, 256, 614400},
                {64, 64, 2, 1, 1});
  // k of GQA: Nk and Hkv.
  expectRequest(KernelParam::tensorMap(AbiTensor::K, 128, 8), call, 0x20000,
                {64, 200, 2, 2, 2}, {272, 128, 54400, 108800},
                {64, 8, 2, 1, 1});
  // D = 64: one panel; D = 256: four.
  expectRequest(KernelParam::tensorMap(AbiTensor::K, 64, 256), call, 0x20000,
                {64, 200, 1, 2, 2}, {272, 128, 54400, 108800},
                {64, 256, 1, 1, 1});
  // D = 96 and 80: a (D, N, 1, H, B) map with a box of one panel, which
  // the kernel copies per panel (zeros past D).
  expectRequest(KernelParam::tensorMap(AbiTensor::K, 96, 128), call, 0x20000,
                {96, 200, 1, 2, 2}, {272, 128, 54400, 108800},
                {64, 128, 1, 1, 1});
  expectRequest(KernelParam::tensorMap(AbiTensor::Q, 80, 64), call, 0x10000,
                {80, 300, 1, 8, 2}, {2048, 128, 256, 614400},
                {64, 64, 1, 1, 1});
  EXPECT_TRUE(
      getTensorMapRequest(KernelParam::tensorMap(AbiTensor::K, 92, 8), call)
          .failed());
  // Every tensor: the queries' rows and heads or the keys'.
  for (AbiTensor t :
       {AbiTensor::Q, AbiTensor::K, AbiTensor::V, AbiTensor::O, AbiTensor::DO,
        AbiTensor::DQ, AbiTensor::DK, AbiTensor::DV}) {
    KernelCall each = call;
    each.set(t, 0x30000, {1 << 20, 1 << 16, 256});
    Expected<TensorMapRequest> r =
        getTensorMapRequest(KernelParam::tensorMap(t, 256, 32), each);
    ASSERT_TRUE(r.ok()) << getName(t) << ": " << r.getMessage();
    bool query = t == AbiTensor::Q || t == AbiTensor::O || t == AbiTensor::DO ||
                 t == AbiTensor::DQ;
    expectRequest(*r, 0x30000, {64, query ? 300u : 200u, 4, query ? 8u : 2u, 2},
                  {512, 128, 1 << 17, 1 << 21}, {64, 32, 4, 1, 1});
  }

  // What TMA cannot address.
  KernelParam kMap = KernelParam::tensorMap(AbiTensor::K, 128, 8);
  auto error = [&](const KernelCall &c) {
    Expected<TensorMapRequest> r = getTensorMapRequest(kMap, c);
    EXPECT_TRUE(r.failed());
    return r.failed() ? r.getMessage() : std::string();
  };
  KernelCall misaligned = call;
  misaligned[AbiTensor::K].data = 0x20008;
  EXPECT_EQ(error(misaligned),
            "k's data at 0x20008 is not 16-byte aligned, as TMA needs");
  KernelCall oddRows = call;
  oddRows[AbiTensor::K].strides[2] = 132;
  EXPECT_EQ(error(oddRows), "stride(k, 2) = 132 elements is 264 bytes, not a "
                            "multiple of 16, as TMA needs");
  KernelCall oddHeads = call;
  oddHeads[AbiTensor::K].strides[1] = 200 * 136 + 4;
  EXPECT_EQ(error(oddHeads), "stride(k, 1) = 27204 elements is 54408 bytes, "
                             "not a multiple of 16, as TMA needs");
  KernelCall huge = call;
  huge[AbiTensor::K].strides[0] = int64_t(1) << 39; // 2^40 bytes
  EXPECT_EQ(error(huge), "stride(k, 0) = 549755813888 elements is negative or "
                         "2^40 bytes or more, which TMA cannot stride");
  huge[AbiTensor::K].strides[0] = (int64_t(1) << 39) - 8; // Below: fine.
  EXPECT_TRUE(getTensorMapRequest(kMap, huge).ok());
  KernelCall negative = call;
  negative[AbiTensor::K].strides[2] = -136;
  EXPECT_TRUE(contains(error(negative), "stride(k, 2) = -136 elements is "
                                        "negative or 2^40 bytes or more"));
  KernelCall negativeRows = call;
  negativeRows.seqKV = -1;
  EXPECT_EQ(error(negativeRows), "Nk = -1 is negative");
  EXPECT_TRUE(
      getTensorMapRequest(KernelParam::pointer(AbiTensor::K), call).failed());
}

TEST(KernelAbi, BiasTensorMapRequests) {
  // B = 2, Hq = 8, Nq = 300, Nk = 200; a bias with rows padded to 208.
  KernelCall call = tensorMapCall();
  KernelCall::Tensor &bias = call[AbiTensor::Bias];
  bias.data = 0x50000;
  int64_t full[4] = {8 * 300 * 208, 300 * 208, 208, 1};
  std::copy(full, full + 4, bias.strides);
  // f32 (32-column boxes): dims (Nk, Nq, Hq, B, 1), byte strides (row,
  // head, batch, 16), 4-byte elements.
  KernelParam f32 = KernelParam::tensorMap(AbiTensor::Bias, 32, 128);
  expectRequest(f32, call, 0x50000, {200, 300, 8, 2, 1},
                {208 * 4, 300 * 208 * 4, 8 * 300 * 208 * 4, 16},
                {32, 128, 1, 1, 1});
  EXPECT_EQ(getTensorMapRequest(f32, call)->elementBytes, 4u);
  // bf16 (64 columns), broadcast over the batch and heads: those dims of
  // size 1 (the kernel reads them at 0).
  KernelParam bf16 = KernelParam::tensorMap(AbiTensor::Bias, 64, 64);
  bias.strides[0] = bias.strides[1] = 0;
  expectRequest(bf16, call, 0x50000, {200, 300, 1, 1, 1}, {208 * 2, 16, 16, 16},
                {64, 64, 1, 1, 1});
  EXPECT_EQ(getTensorMapRequest(bf16, call)->elementBytes, 2u);

  // What TMA cannot copy: the fallback's cases (fa::Kernel compiles the
  // kernel with one load a score for them).
  auto error = [&](const KernelCall &c) {
    Expected<TensorMapRequest> r = getTensorMapRequest(f32, c);
    EXPECT_TRUE(r.failed());
    return r.failed() ? r.getMessage() : std::string();
  };
  KernelCall transposed = call;
  std::copy(full, full + 4, transposed[AbiTensor::Bias].strides);
  transposed[AbiTensor::Bias].strides[2] = 1;
  transposed[AbiTensor::Bias].strides[3] = 300;
  EXPECT_EQ(error(transposed), "stride(bias, 3) = 300 elements; TMA copies of "
                               "bias blocks need 1");
  KernelCall oddRows = call;
  oddRows[AbiTensor::Bias].strides[2] = 201;
  EXPECT_EQ(error(oddRows), "stride(bias, 2) = 201 elements is 804 bytes, not "
                            "a multiple of 16, as TMA needs");
  KernelCall misaligned = call;
  misaligned[AbiTensor::Bias].data = 0x50004;
  EXPECT_EQ(error(misaligned),
            "bias's data at 0x50004 is not 16-byte aligned, as TMA needs");
}

/// A stand-in encoder: counts its calls, keeps the last request and fills
/// the map with words derived from it.
int encodeCalls = 0;
TensorMapRequest lastRequest;
Status testEncoder(const TensorMapRequest &request, void *map) {
  ++encodeCalls;
  lastRequest = request;
  uint64_t words[16];
  for (uint64_t i = 0; i < 16; ++i)
    words[i] = request.data + (request.box[1] << 8) + i;
  std::memcpy(map, words, sizeof(words));
  return Status::success();
}
Status failingEncoder(const TensorMapRequest &, void *) {
  return Status::error("cuTensorMapEncodeTiled failed: no way");
}

/// Whether the 128 bytes at `map` are testEncoder's for data and box rows.
bool holdsEncoding(const void *map, uint64_t data, uint64_t boxRows) {
  uint64_t words[16];
  std::memcpy(words, map, sizeof(words));
  for (uint64_t i = 0; i < 16; ++i)
    if (words[i] != data + (boxRows << 8) + i)
      return false;
  return true;
}

bool allZero(const void *map) {
  const unsigned char *bytes = static_cast<const unsigned char *>(map);
  for (int i = 0; i < 128; ++i)
    if (bytes[i])
      return false;
  return true;
}

TEST(KernelAbi, ParamBufferEncodesTensorMaps) {
  KernelAbi abi;
  abi.name = "fa_tma";
  abi.grid = {GridAxis::tilesNq(128), GridAxis::hq(), GridAxis::batch()};
  abi.threads = 384;
  abi.params = {KernelParam::pointer(AbiTensor::Q),
                KernelParam::tensorMap(AbiTensor::K, 128, 64),
                KernelParam::ofSize(AbiSize::Nk),
                KernelParam::tensorMap(AbiTensor::Q, 128, 128),
                KernelParam::stride(AbiTensor::K, 2, MachineType::I32),
                KernelParam::ofSize(AbiSize::Hq),
                KernelParam::ofSize(AbiSize::B)};
  ASSERT_TRUE(verifyKernelAbi(abi).ok()) << verifyKernelAbi(abi).getMessage();
  KernelCall call = tensorMapCall();

  encodeCalls = 0;
  Expected<ParamBuffer> built = ParamBuffer::build(abi, call, &testEncoder);
  ASSERT_TRUE(built.ok()) << built.getMessage();
  EXPECT_EQ(encodeCalls, 2);
  // The last map encoded is q's.
  expectRequest(lastRequest, 0x10000, {64, 300, 2, 8, 2},
                {2048, 128, 256, 614400}, {64, 128, 2, 1, 1});
  // Moved, the buffer's pointers stay valid.
  ParamBuffer buffer = built.take();
  ASSERT_EQ(buffer.size(), abi.params.size());
  void **args = buffer.getArgs();
  for (size_t i : {size_t(1), size_t(3)}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(args[i]) % 128, 0u) << i;
    EXPECT_EQ(args[i], buffer.getTensorMap(i)) << i;
    EXPECT_EQ(buffer.getBits(i), 0u) << i;
  }
  EXPECT_NE(args[1], args[3]);
  EXPECT_TRUE(holdsEncoding(args[1], 0x20000, 64));
  EXPECT_TRUE(holdsEncoding(args[3], 0x10000, 128));
  // The other parameters, around the maps, are as ever.
  const uint64_t expected[] = {0x10000, 0, 200, 0, 136, 8, 2};
  for (size_t i : {size_t(0), size_t(2), size_t(4), size_t(5), size_t(6)}) {
    EXPECT_EQ(buffer.getTensorMap(i), nullptr) << i;
    EXPECT_EQ(buffer.getBits(i), expected[i]) << i;
    uint64_t read = 0;
    std::memcpy(&read, args[i], getByteSize(abi.params[i].type));
    EXPECT_EQ(read, expected[i]) << i;
  }
  ParamBuffer moved = std::move(buffer);
  EXPECT_EQ(moved.getArgs()[1], moved.getTensorMap(1));
  EXPECT_EQ(moved.getArgs()[3], moved.getTensorMap(3));
  EXPECT_TRUE(holdsEncoding(moved.getArgs()[1], 0x20000, 64));
  EXPECT_TRUE(holdsEncoding(moved.getArgs()[3], 0x10000, 128));
  uint64_t nk = 0;
  std::memcpy(&nk, moved.getArgs()[2], 4);
  EXPECT_EQ(nk, 200u);

  // Without an encoder there is no map.
  Expected<ParamBuffer> noEncoder = ParamBuffer::build(abi, call);
  ASSERT_TRUE(noEncoder.failed());
  EXPECT_EQ(noEncoder.getMessage(),
            "kernel fa_tma, parameter 1 (tensor_map(k, 128, 64) : tmap): a "
            "tensor map needs the CUDA driver's encoder");
  // The encoder's errors, and the request's, name the parameter.
  Expected<ParamBuffer> failing =
      ParamBuffer::build(abi, call, &failingEncoder);
  ASSERT_TRUE(failing.failed());
  EXPECT_EQ(failing.getMessage(),
            "kernel fa_tma, parameter 1 (tensor_map(k, 128, 64) : tmap): "
            "cuTensorMapEncodeTiled failed: no way");
  KernelCall misaligned = call;
  misaligned[AbiTensor::Q].data = 0x10004;
  Expected<ParamBuffer> bad = ParamBuffer::build(abi, misaligned, &testEncoder);
  ASSERT_TRUE(bad.failed());
  EXPECT_EQ(bad.getMessage(),
            "kernel fa_tma, parameter 3 (tensor_map(q, 128, 128) : tmap): q's "
            "data at 0x10004 is not 16-byte aligned, as TMA needs");

  // Nk = 0: k has no data; its map stays zero and is not encoded.
  KernelCall noKeys = call;
  noKeys.seqKV = 0;
  encodeCalls = 0;
  Expected<ParamBuffer> empty = ParamBuffer::build(abi, noKeys, &testEncoder);
  ASSERT_TRUE(empty.ok()) << empty.getMessage();
  EXPECT_EQ(encodeCalls, 1);
  EXPECT_TRUE(allZero(empty->getArgs()[1]));
  EXPECT_EQ(empty->getArgs()[1], empty->getTensorMap(1));
  EXPECT_TRUE(holdsEncoding(empty->getArgs()[3], 0x10000, 128));
  // B = 0 (nor Hq = 0): no map at all to encode, so no encoder is needed.
  for (int which = 0; which < 2; ++which) {
    KernelCall nothing = call;
    (which ? nothing.headsQ : nothing.batch) = 0;
    if (which)
      nothing.seqKV = 0; // k's heads are Hkv: empty through its rows.
    encodeCalls = 0;
    Expected<ParamBuffer> none = ParamBuffer::build(abi, nothing);
    ASSERT_TRUE(none.ok()) << none.getMessage();
    EXPECT_EQ(encodeCalls, 0);
    EXPECT_TRUE(allZero(none->getArgs()[1]));
    EXPECT_TRUE(allZero(none->getArgs()[3]));
    EXPECT_EQ(none->getBits(1), 0u);
  }
}

} // namespace
