//===- CudaLaunchTest.cpp - What FA's launches hand the driver ------------===//
//
// FA's kernels, compiled to PTX for sm_90a here (no GPU needed), launched
// through CudaJit on the stand-in driver (unittests/Runtime/FakeCuda.cpp),
// which records each launch's grid, block, shared memory and parameter
// bytes (sized by the kernel's .param list in the PTX). Checked: the
// parameter buffer a plain forward, a scored forward with dropout and
// captures, and a backward produce, value by value; the grid of each,
// folded where heads or batch pass CUDA's 65535 (70000 query heads); and
// that a call which does not fit the kernel (another count of captures) is
// refused before any launch.
//
//===----------------------------------------------------------------------===//

#include "../Runtime/FakeCudaLaunches.h"
#include "fa/Compiler/CudaJit.h"
#include "fa/Compiler/Registration.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelCache.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>

namespace rt = ::fa::runtime;
using rt::AbiTensor;

namespace {

/// The stand-in driver: $FA_FAKE_CUDA_PATH, else beside this binary (as
/// scripts/gpu/pack.sh ships them), else where the build put it.
std::string fakeCudaPath() {
  if (const char *path = std::getenv("FA_FAKE_CUDA_PATH"); path && *path)
    return path;
  char self[4096];
  ssize_t size = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = size > 0 ? std::string(self, size_t(size)) : "";
  std::string beside =
      dir.substr(0, dir.find_last_of('/') + 1) + "libfa-fake-cuda.so";
  if (access(beside.c_str(), R_OK) == 0)
    return beside;
  return FA_FAKE_CUDA_BUILD_PATH;
}

/// The stand-in's launch records.
class Launches {
public:
  explicit Launches(const std::string &path)
      : handle(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (!handle)
      return;
    count = reinterpret_cast<FaFakeCudaLaunchCountFn>(
        dlsym(handle, "faFakeCudaLaunchCount"));
    get = reinterpret_cast<FaFakeCudaGetLaunchFn>(
        dlsym(handle, "faFakeCudaGetLaunch"));
    clearFn = reinterpret_cast<FaFakeCudaClearLaunchesFn>(
        dlsym(handle, "faFakeCudaClearLaunches"));
    tensorMapFn = reinterpret_cast<FaFakeCudaGetTensorMapCallFn>(
        dlsym(handle, "faFakeCudaGetTensorMapCall"));
  }
  ~Launches() {
    if (handle)
      dlclose(handle);
  }
  bool ok() const { return count && get && clearFn && tensorMapFn; }
  /// The last cuTensorMapEncodeTiled's arguments; false when none.
  bool lastTensorMap(FaFakeTensorMapCall &call) {
    return tensorMapFn(&call) != 0;
  }
  void clear() { clearFn(); }
  std::vector<FaFakeLaunch> all() {
    std::vector<FaFakeLaunch> result(static_cast<size_t>(count()));
    for (size_t i = 0; i < result.size(); ++i)
      get(int(i), &result[i]);
    return result;
  }

private:
  void *handle;
  FaFakeCudaLaunchCountFn count = nullptr;
  FaFakeCudaGetLaunchFn get = nullptr;
  FaFakeCudaGetTensorMapCallFn tensorMapFn = nullptr;
  FaFakeCudaClearLaunchesFn clearFn = nullptr;
};

uint64_t bitsOf(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}

class CudaLaunchTest : public ::testing::Test {
protected:
  void SetUp() override {
    path = fakeCudaPath();
    driver = rt::Driver::load(path);
    ASSERT_TRUE(driver->available())
        << path << ": " << driver->unavailableReason();
    rt::Expected<rt::Device> found = driver->getDevice(0);
    ASSERT_TRUE(found.ok()) << found.getMessage();
    device.emplace(found.take());
    launches = std::make_unique<Launches>(path);
    ASSERT_TRUE(launches->ok()) << "no launch records in " << path;
    launches->clear();
    mlir::DialectRegistry registry;
    mlir::fa::registerDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
  }

  /// The single fa.attention (or fa.attention_grad) of `text`.
  template <typename OpT> OpT parse(const std::string &text) {
    module = mlir::parseSourceString<mlir::ModuleOp>(text, context.get());
    EXPECT_TRUE(module) << text;
    OpT found;
    if (module)
      module->walk([&](OpT op) { found = op; });
    return found;
  }

  /// `text`'s fa.attention compiled for sm_90a with `tile`'s options.
  mlir::FailureOr<mlir::fa::CudaKernelImage>
  compileSm90a(const std::string &text, mlir::fa::CudaForwardTile tile = {}) {
    auto op = parse<mlir::fa::AttentionOp>(text);
    if (!op)
      return mlir::failure();
    return mlir::fa::compileCudaKernel(op, "sm_90a", tile);
  }

  /// The image's kernel `name`, loaded on the stand-in with its shared
  /// memory allowed.
  rt::Function load(const std::string &ptx, const rt::KernelAbi &abi) {
    modules.push_back(
        std::make_unique<rt::Module>(rt::Module::load(*device, ptx).take()));
    rt::Function function = rt::Function::get(*modules.back(), abi.name).take();
    function.setMaxDynamicSharedMemory(int(abi.sharedBytes)).check();
    return function;
  }

  /// A forward call: contiguous [B, H, N, D] q, k, v, o at made-up device
  /// addresses, lse [B, Hq, Nq].
  rt::KernelCall forwardCall(int64_t b, int64_t hq, int64_t hkv, int64_t nq,
                             int64_t nk, int64_t d) {
    rt::KernelCall call;
    call.set(AbiTensor::Q, 0x10000, {hq * nq * d, nq * d, d});
    call.set(AbiTensor::K, 0x20000, {hkv * nk * d, nk * d, d});
    call.set(AbiTensor::V, 0x30000, {hkv * nk * d, nk * d, d});
    call.set(AbiTensor::O, 0x40000, {hq * nq * d, nq * d, d});
    call.set(AbiTensor::Lse, 0x50000, {hq * nq, nq});
    call.batch = b;
    call.headsQ = hq;
    call.headsKV = hkv;
    call.seqQ = nq;
    call.seqKV = nk;
    call.scale = float(1.0 / std::sqrt(double(d)));
    call.scaleLog2 = float(M_LOG2E / std::sqrt(double(d)));
    return call;
  }

  /// `launch` passed exactly `expected` before its tensor maps (the last
  /// parameters; lastTensorMap has what was encoded), each in its PTX
  /// parameter's size.
  void expectParams(const FaFakeLaunch &launch, const rt::KernelAbi &abi,
                    const std::vector<uint64_t> &expected) {
    ASSERT_EQ(size_t(launch.numParams), abi.params.size()) << launch.name;
    size_t scalars = 0;
    while (scalars < abi.params.size() &&
           abi.params[scalars].type != rt::MachineType::TensorMap)
      ++scalars;
    ASSERT_EQ(expected.size(), scalars) << launch.name;
    for (size_t i = 0; i < expected.size(); ++i) {
      // The PTX signature is the ABI's: each parameter's machine type.
      EXPECT_EQ(launch.paramSizes[i], rt::getByteSize(abi.params[i].type))
          << launch.name << " parameter " << i;
      uint64_t mask = launch.paramSizes[i] == 8 ? ~uint64_t(0) : 0xffffffffu;
      EXPECT_EQ(launch.params[i], expected[i] & mask)
          << launch.name << " parameter " << i << " ("
          << rt::printKernelParam(abi.params[i]) << ")";
    }
  }

  /// The last tensor map encoded was a 5-D map of `address` with these
  /// dims, byte strides and box.
  void expectLastTensorMap(uint64_t address,
                           const std::array<uint64_t, 5> &dims,
                           const std::array<uint64_t, 4> &strides,
                           const std::array<uint32_t, 5> &box) {
    FaFakeTensorMapCall map;
    ASSERT_TRUE(launches->lastTensorMap(map));
    EXPECT_EQ(map.rank, 5u);
    EXPECT_EQ(map.globalAddress, address);
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(map.globalDim[i], dims[i]) << "dim " << i;
      EXPECT_EQ(map.boxDim[i], box[i]) << "box " << i;
    }
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(map.globalStrides[i], strides[i]) << "stride " << i;
  }

  std::string path;
  std::unique_ptr<rt::Driver> driver;
  std::optional<rt::Device> device;
  std::unique_ptr<Launches> launches;
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<std::unique_ptr<rt::Module>> modules;
};

constexpr const char *kPlain = R"mlir(
func.func @f(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
)mlir";

/// The forward's options without a producer warpgroup.
mlir::fa::CudaForwardTile withoutWarpSpecialization() {
  mlir::fa::CudaForwardTile tile;
  tile.warpSpecialize = false;
  return tile;
}

/// The plain forward's parameters (#fa.kernel_abi text) before any tensor
/// map: pointers, strides, sizes.
constexpr const char *kPlainParams =
    "params = [q : ptr, k : ptr, v : ptr, o : ptr, lse : ptr, "
    "stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, "
    "stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, "
    "stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, "
    "stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, "
    "stride(lse, 0) : i64, stride(lse, 1) : i64, Nq : i32, Nk : i32, "
    "group : i32, Hq : i32, B : i32";

TEST_F(CudaLaunchTest, PlainForward) {
  mlir::FailureOr<mlir::fa::CudaKernelImage> image =
      compileSm90a(kPlain, withoutWarpSpecialization());
  ASSERT_TRUE(mlir::succeeded(image));
  // The kernel-level IR's kernel: its scale is a constant of the kernel, so
  // its ABI has no scale parameter. On sm_90a without a producer warpgroup
  // it is the wgmma kernel: 64 x 128 tiles at D = 64, two K/V stages.
  const rt::KernelAbi &abi = image->abi;
  EXPECT_EQ(abi.name, "fa_forward_0");
  EXPECT_EQ(rt::printKernelAbi(abi),
            "grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 73728, " +
                std::string(kPlainParams) + "]");
  rt::Function function = load(image->ptx, abi);

  rt::KernelCall call = forwardCall(2, 8, 2, 300, 200, 64);
  rt::Status status = mlir::fa::launchCudaKernel(abi, function, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 1u);
  const FaFakeLaunch &l = all[0];
  EXPECT_STREQ(l.name, "fa_forward_0");
  // (ceil(300 / 64), Hq, B).
  EXPECT_EQ(l.grid[0], 5u);
  EXPECT_EQ(l.grid[1], 8u);
  EXPECT_EQ(l.grid[2], 2u);
  EXPECT_EQ(l.block[0], 128u);
  EXPECT_EQ(l.sharedBytes, 73728u);
  expectParams(
      l, abi, {0x10000,  0x20000, 0x30000,      0x40000,  0x50000, 8 * 300 * 64,
               300 * 64, 64,      2 * 200 * 64, 200 * 64, 64,      2 * 200 * 64,
               200 * 64, 64,      8 * 300 * 64, 300 * 64, 64,      8 * 300,
               300,      300,     200,          4,        8,       2});

  // Nothing to do: nothing launched.
  launches->clear();
  rt::KernelCall empty = call;
  empty.seqQ = 0;
  ASSERT_TRUE(mlir::fa::launchCudaKernel(abi, function, empty, nullptr).ok());
  EXPECT_TRUE(launches->all().empty());
}

// By default the plain kernel has a producer warpgroup that copies with
// TMA: 128 query rows, 384 threads, and a tensor map of Q, K and V (boxes
// of the whole tile at D = 64: 128 query rows, 192 keys), which the launch
// encodes through the function's driver from the call's pointers, sizes and
// strides. Its grid is persistent: one CTA an item here, where the items (3
// query tiles x 8 heads x 2 batches) are fewer than the SMs hold.
TEST_F(CudaLaunchTest, WarpSpecializedForwardEncodesTensorMaps) {
  mlir::FailureOr<mlir::fa::CudaKernelImage> image = compileSm90a(kPlain);
  ASSERT_TRUE(mlir::succeeded(image));
  const rt::KernelAbi &abi = image->abi;
  EXPECT_EQ(rt::printKernelAbi(abi),
            "grid = [persistent(Nq, 128, 1), 1, 1], threads = 384, shared = "
            "114768, " +
                std::string(kPlainParams) +
                ", tensor_map(q, 64, 128) : tmap, tensor_map(k, 64, 192) : "
                "tmap, tensor_map(v, 64, 192) : tmap]");
  rt::Function function = load(image->ptx, abi);

  rt::KernelCall call = forwardCall(2, 8, 2, 300, 200, 64);
  rt::Status status = mlir::fa::launchCudaKernel(abi, function, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].grid[0], 48u); // ceil(300 / 128) x 8 x 2
  EXPECT_EQ(all[0].grid[1], 1u);
  EXPECT_EQ(all[0].block[0], 384u);
  EXPECT_EQ(all[0].sharedBytes, 114768u);
  // The last map encoded is V's: [2, 2, 200, 64] at 0x30000.
  expectLastTensorMap(0x30000, {64, 200, 1, 2, 2},
                      {64 * 2, 128, 200 * 64 * 2, 2 * 200 * 64 * 2},
                      {64, 192, 1, 1, 1});
}

// Head dims between wgmma's 64-column panels (Dk = 96, Dv = 80): the maps
// keep the tensors' D, and their boxes are one 64-column panel, which the
// kernel copies once per panel (zeros past D).
TEST_F(CudaLaunchTest, PaddedHeadDimsEncodePanelMaps) {
  mlir::FailureOr<mlir::fa::CudaKernelImage> image = compileSm90a(R"mlir(
func.func @f(%q: tensor<?x8x?x96xbf16>, %k: tensor<?x2x?x96xbf16>, %v: tensor<?x2x?x80xbf16>) -> tensor<?x8x?x80xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x96xbf16>, tensor<?x2x?x96xbf16>, tensor<?x2x?x80xbf16> -> tensor<?x8x?x80xbf16>
  return %o : tensor<?x8x?x80xbf16>
}
)mlir");
  ASSERT_TRUE(mlir::succeeded(image));
  const rt::KernelAbi &abi = image->abi;
  std::string text = rt::printKernelAbi(abi);
  EXPECT_NE(text.find("tensor_map(q, 96, 128) : tmap, tensor_map(k, 96, 128) "
                      ": tmap, tensor_map(v, 80, 128) : tmap]"),
            std::string::npos)
      << text;
  rt::Function function = load(image->ptx, abi);

  rt::KernelCall call = forwardCall(2, 8, 2, 300, 200, 96);
  call.set(AbiTensor::V, 0x30000, {2 * 200 * 80, 200 * 80, 80});
  call.set(AbiTensor::O, 0x40000, {8 * 300 * 80, 300 * 80, 80});
  rt::Status status = mlir::fa::launchCudaKernel(abi, function, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  ASSERT_EQ(launches->all().size(), 1u);
  // V's map, the last encoded: [2, 2, 200, 80] at 0x30000.
  expectLastTensorMap(0x30000, {80, 200, 1, 2, 2},
                      {80 * 2, 128, 200 * 80 * 2, 2 * 200 * 80 * 2},
                      {64, 128, 1, 1, 1});
}

constexpr const char *kScored = R"mlir(
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %bias: tensor<1x4x?x?xf16>, %slopes: tensor<4xf32>, %seed: i64, %doc: tensor<?xi32>, %tab: tensor<4x?xf16>) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x4x?x?xf16>) alibi_slopes(%slopes : tensor<4xf32>) dropout_seed(%seed) captures(%doc, %tab : tensor<?xi32>, tensor<4x?xf16>) {dropout_p = 1.000000e-01 : f32} : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16> score_mod {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %cd: tensor<?xi32>, %ct: tensor<4x?xf16>):
    %t = tensor.extract %ct[%h, %j] : tensor<4x?xf16>
    %t32 = arith.extf %t : f16 to f32
    %r = arith.addf %x, %t32 : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %cd: tensor<?xi32>, %ct: tensor<4x?xf16>):
    %di = tensor.extract %cd[%i] : tensor<?xi32>
    %dj = tensor.extract %cd[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x4x?x64xbf16>
}
)mlir";

TEST_F(CudaLaunchTest, ScoredForwardWithDropoutAndCaptures) {
  mlir::FailureOr<mlir::fa::CudaKernelImage> image = compileSm90a(kScored);
  ASSERT_TRUE(mlir::succeeded(image));
  const rt::KernelAbi &abi = image->abi;
  std::string text = rt::printKernelAbi(abi);
  // The plain parameters (the kernel-level IR carries the scale), then
  // the bias's and slopes' pointers and strides, the seed and the captures'
  // pointers and strides, in the kernel's argument order, the key ranges
  // (the mask_mod reads neither b nor h), and last the TMA maps of the
  // warp-specialized kernel: 32 keys a K/V tile with four per-score terms
  // (bias, score_mod, mask_mod, dropout).
  EXPECT_NE(text.find("B : i32, bias : ptr, stride(bias, 0) : i64, "
                      "stride(bias, 1) : i64, stride(bias, 2) : i64, "
                      "stride(bias, 3) : i64, slopes : ptr, "
                      "stride(slopes, 0) : i64, seed : i64, capture0 : ptr, "
                      "stride(capture0, 0) : i64, capture1 : ptr, "
                      "stride(capture1, 0) : i64, stride(capture1, 1) : "
                      "i64, key_ranges : ptr, tensor_map(q, 64, 128) : tmap, "
                      "tensor_map(k, 64, 32) : tmap, tensor_map(v, 64, 32) : "
                      "tmap]"),
            std::string::npos)
      << text;
  rt::Function function = load(image->ptx, abi);

  rt::KernelCall call = forwardCall(3, 4, 2, 100, 130, 64);
  call[AbiTensor::Lse] = {};
  rt::KernelCall::Tensor &bias = call[AbiTensor::Bias];
  bias.data = 0x60000;
  int64_t biasStrides[4] = {0, 100 * 130, 130, 1};
  std::copy(biasStrides, biasStrides + 4, bias.strides);
  call.set(AbiTensor::Slopes, 0x70000, {0});
  call.seed = 0x123456789;
  call.captures = {{0x80000, {1}}, {0x90000, {130, 1}}};
  call[AbiTensor::KeyRanges].data = 0xa0000;
  rt::Status status = mlir::fa::launchCudaKernel(abi, function, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 1u);
  const FaFakeLaunch &l = all[0];
  EXPECT_EQ(l.grid[0], (100u + abi.grid.x.rows - 1) / abi.grid.x.rows);
  EXPECT_EQ(l.grid[1], 4u);
  EXPECT_EQ(l.grid[2], 3u);
  expectParams(
      l, abi,
      {0x10000,  0x20000,     0x30000,      0x40000,  0,       4 * 100 * 64,
       100 * 64, 64,          2 * 130 * 64, 130 * 64, 64,      2 * 130 * 64,
       130 * 64, 64,          4 * 100 * 64, 100 * 64, 64,      0,
       0,        100,         130,          2,        4,       3,
       0x60000,  0,           100 * 130,    130,      1,       0x70000,
       0,        0x123456789, 0x80000,      1,        0x90000, 130,
       1,        0xa0000});
  FaFakeTensorMapCall map;
  ASSERT_TRUE(launches->lastTensorMap(map));
  EXPECT_EQ(map.globalAddress, 0x30000u); // V's, in boxes of 32 rows
  EXPECT_EQ(map.boxDim[1], 32u);

  // A call with a capture too few: a clear error, nothing launched.
  launches->clear();
  rt::KernelCall fewer = call;
  fewer.captures.pop_back();
  status = mlir::fa::launchCudaKernel(abi, function, fewer, nullptr);
  ASSERT_TRUE(status.failed());
  EXPECT_EQ(status.getMessage(),
            "kernel fa_forward_0 takes 2 captures (ranks 1, 2), but the call "
            "passes 1 (ranks 1)");
  EXPECT_TRUE(launches->all().empty());
}

constexpr const char *kDocuments = R"mlir(
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %doc: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  %o = fa.attention %q, %k, %v captures(%doc : tensor<?xi32>) : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x4x?x64xbf16> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %cd: tensor<?xi32>):
    %di = tensor.extract %cd[%i] : tensor<?xi32>
    %dj = tensor.extract %cd[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o : tensor<?x4x?x64xbf16>
}
)mlir";

TEST_F(CudaLaunchTest, ForwardWithKeyRanges) {
  mlir::FailureOr<mlir::fa::CudaKernelImage> image = compileSm90a(kDocuments);
  ASSERT_TRUE(mlir::succeeded(image));
  // A mask_mod of i and j: the forward, then its key-range kernel (one CTA
  // of 4 warps per query tile of the forward and chunk of 128 keys), both
  // taking the ranges.
  ASSERT_TRUE(image->keyRanges);
  EXPECT_EQ(image->keyRanges->name, "fa_forward_0_key_ranges");
  EXPECT_EQ(rt::printGridRule(image->keyRanges->grid),
            "[tiles(Nq, 128), tiles(Nk, 128), 1]");
  EXPECT_EQ(image->keyRanges->threads, 128u);
  EXPECT_TRUE(rt::takesKeyRanges(image->abi));
  rt::CachedKernel kernel;
  kernel.kernels = {image->abi, *image->keyRanges};
  kernel.chip = "sm_90a";
  kernel.image = image->ptx;
  modules.push_back(std::make_unique<rt::Module>(
      rt::Module::load(*device, image->ptx).take()));
  mlir::fa::CudaFunctions functions =
      mlir::fa::loadCudaFunctions(kernel, *modules.back()).take();

  // 300 queries: 3 tiles; the ranges (20 i32 a tile) are the launch's own,
  // the same pointer in both kernels, the key-range kernel first.
  rt::KernelCall call = forwardCall(2, 4, 2, 300, 500, 64);
  call[AbiTensor::Lse] = {};
  call.captures = {{0x80000, {1}}};
  rt::Status status =
      mlir::fa::launchCudaForward(kernel, functions, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_STREQ(all[0].name, "fa_forward_0_key_ranges");
  EXPECT_STREQ(all[1].name, "fa_forward_0");
  EXPECT_EQ(all[0].grid[0], 3u);
  EXPECT_EQ(all[0].grid[1], 4u); // ceil(500 / 128) key chunks.
  EXPECT_EQ(all[0].grid[2], 1u);
  EXPECT_EQ(all[0].block[0], 128u);
  // The forward persistent (key ranges at D = 64): 3 x 4 x 2 items, fewer
  // than the SMs.
  EXPECT_EQ(rt::printGridRule(image->abi.grid),
            "[persistent(Nq, 128, 1), 1, 1]");
  EXPECT_EQ(all[1].grid[0], 24u);
  EXPECT_EQ(all[1].grid[1], 1u);
  EXPECT_EQ(all[1].grid[2], 1u);
  auto rangesOf = [&](const FaFakeLaunch &launch, const rt::KernelAbi &abi) {
    int64_t i =
        rt::findParam(abi, rt::KernelParam::pointer(AbiTensor::KeyRanges));
    return i < 0 ? uint64_t(0) : launch.params[i];
  };
  uint64_t ranges = rangesOf(all[0], *image->keyRanges);
  EXPECT_NE(ranges, 0u);
  EXPECT_EQ(rangesOf(all[1], image->abi), ranges);
  EXPECT_EQ(rt::getKeyRangesBytes(image->abi.grid, call), 256u);
  call.seqQ = 1000;
  // 8 query tiles of 4 warps, each a record of 5 i32 (not per item of the
  // persistent grid).
  EXPECT_EQ(rt::getKeyRangesBytes(image->abi.grid, call), 8u * 4 * 5 * 4);

  // No queries: nothing launched.
  launches->clear();
  call.seqQ = 0;
  status = mlir::fa::launchCudaForward(kernel, functions, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_TRUE(launches->all().empty());

  // Without fwd-key-ranges: the forward alone, with no ranges to take.
  mlir::fa::CudaForwardTile tile;
  tile.keyRanges = false;
  image = compileSm90a(kDocuments, tile);
  ASSERT_TRUE(mlir::succeeded(image));
  EXPECT_FALSE(image->keyRanges);
  EXPECT_FALSE(rt::takesKeyRanges(image->abi));
}

constexpr const char *kBackward = R"mlir(
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x4x?x64xbf16>, %do: tensor<?x4x?x64xbf16>, %lse: tensor<?x4x?xf32>) -> (tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse {causal = #fa.causal<bottom_right>} : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> -> tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
  return %dq, %dk, %dv : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
}
)mlir";

/// The backward of kBackward (atomic dQ: sm_90a's default there) as a cache
/// entry, and its kernels loaded on the stand-in.
struct Backward {
  rt::CachedKernel kernel;
  mlir::fa::CudaFunctions functions;
};

TEST_F(CudaLaunchTest, Backward) {
  auto op = parse<mlir::fa::AttentionGradOp>(kBackward);
  ASSERT_TRUE(op);
  mlir::FailureOr<mlir::fa::CudaBackwardImage> image =
      mlir::fa::compileCudaBackward(op, "sm_90a");
  ASSERT_TRUE(mlir::succeeded(image));
  Backward bwd;
  bwd.kernel.kernels = image->kernels;
  bwd.kernel.chip = "sm_90a";
  bwd.kernel.image = image->ptx;
  modules.push_back(std::make_unique<rt::Module>(
      rt::Module::load(*device, image->ptx).take()));
  bwd.functions =
      mlir::fa::loadCudaFunctions(bwd.kernel, *modules.back()).take();
  ASSERT_EQ(bwd.kernel.kernels.size(), 3u);
  const char *names[3] = {"fa_backward_dsum_0", "fa_backward_dkdv_0",
                          "fa_backward_dq_convert_0"};
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bwd.kernel.kernels[i].name, names[i]);
  const rt::KernelAbi &dkdvAbi = bwd.kernel.kernels[1];
  EXPECT_EQ(rt::printKernelAbi(bwd.kernel.kernels[0]),
            "grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 0, "
            "params = [q : ptr, k : ptr, v : ptr, o : ptr, do : ptr, "
            "lse : ptr, dq : ptr, dk : ptr, dv : ptr, dsum : ptr, "
            "stride(q, 0) : i64, stride(q, 1) : i64, stride(q, 2) : i64, "
            "stride(k, 0) : i64, stride(k, 1) : i64, stride(k, 2) : i64, "
            "stride(v, 0) : i64, stride(v, 1) : i64, stride(v, 2) : i64, "
            "stride(o, 0) : i64, stride(o, 1) : i64, stride(o, 2) : i64, "
            "stride(do, 0) : i64, stride(do, 1) : i64, stride(do, 2) : i64, "
            "stride(dq, 0) : i64, stride(dq, 1) : i64, stride(dq, 2) : i64, "
            "stride(dk, 0) : i64, stride(dk, 1) : i64, stride(dk, 2) : i64, "
            "stride(dv, 0) : i64, stride(dv, 1) : i64, stride(dv, 2) : i64, "
            "stride(lse, 0) : i64, stride(lse, 1) : i64, "
            "stride(dsum, 0) : i64, stride(dsum, 1) : i64, Nq : i32, "
            "Nk : i32, group : i32, Hq : i32, Hkv : i32, B : i32, "
            "scale_log2 : f32, scale : f32, dq_accum(64) : ptr]");

  const int64_t b = 2, hq = 4, hkv = 2, nq = 100, nk = 300, d = 64;
  mlir::fa::CudaBackwardCall call;
  static_cast<rt::KernelCall &>(call) = forwardCall(b, hq, hkv, nq, nk, d);
  call.set(AbiTensor::DO, 0xa0000, {hq * nq * d, nq * d, d});
  call.set(AbiTensor::DQ, 0xb0000, {hq * nq * d, nq * d, d});
  call.set(AbiTensor::DK, 0xc0000, {hkv * nk * d, nk * d, d});
  call.set(AbiTensor::DV, 0xd0000, {hkv * nk * d, nk * d, d});
  call.workspace = 0x100000;
  rt::Status status =
      mlir::fa::launchCudaBackward(bwd.kernel, bwd.functions, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 3u);
  // Dsum at the workspace ([B, Hq, Nq] f32), the accumulator after it
  // (rounded up to 256 bytes).
  uint64_t accum = 0x100000 + (b * hq * nq * 4 + 255) / 256 * 256;
  std::vector<uint64_t> expected = {0x10000,
                                    0x20000,
                                    0x30000,
                                    0x40000,
                                    0xa0000,
                                    0x50000,
                                    0xb0000,
                                    0xc0000,
                                    0xd0000,
                                    0x100000,
                                    hq * nq * d,
                                    nq * d,
                                    d,
                                    hkv * nk * d,
                                    nk * d,
                                    d,
                                    hkv * nk * d,
                                    nk * d,
                                    d,
                                    hq * nq * d,
                                    nq * d,
                                    d,
                                    hq * nq * d,
                                    nq * d,
                                    d,
                                    hq * nq * d,
                                    nq * d,
                                    d,
                                    hkv * nk * d,
                                    nk * d,
                                    d,
                                    hkv * nk * d,
                                    nk * d,
                                    d,
                                    hq * nq,
                                    nq,
                                    hq * nq,
                                    nq,
                                    nq,
                                    nk,
                                    hq / hkv,
                                    hq,
                                    hkv,
                                    b,
                                    bitsOf(call.scaleLog2),
                                    bitsOf(call.scale),
                                    accum};
  for (int i = 0; i < 3; ++i) {
    EXPECT_STREQ(all[i].name, names[i]);
    expectParams(all[i], bwd.kernel.kernels[i], expected);
    EXPECT_EQ(all[i].block[0], bwd.kernel.kernels[i].threads);
    EXPECT_EQ(all[i].sharedBytes, bwd.kernel.kernels[i].sharedBytes);
  }
  // dsum and dq_convert: (ceil(Nq / 64), Hq, B); dK/dV: key tiles, Hkv, B.
  EXPECT_EQ(all[0].grid[0], 2u);
  EXPECT_EQ(all[0].grid[1], unsigned(hq));
  EXPECT_EQ(all[1].grid[0],
            unsigned((nk + dkdvAbi.grid.x.rows - 1) / dkdvAbi.grid.x.rows));
  EXPECT_EQ(all[1].grid[1], unsigned(hkv));
  EXPECT_EQ(all[2].grid[1], unsigned(hq));
  for (const FaFakeLaunch &l : all)
    EXPECT_EQ(l.grid[2], unsigned(b)) << l.name;

  // A capture the kernels do not take: refused before any launch.
  launches->clear();
  mlir::fa::CudaBackwardCall extra = call;
  extra.captures.push_back({0xe0000, {1}});
  status =
      mlir::fa::launchCudaBackward(bwd.kernel, bwd.functions, extra, nullptr);
  ASSERT_TRUE(status.failed());
  EXPECT_EQ(status.getMessage(),
            "backward: kernel fa_backward_dsum_0 takes 0 captures (ranks ), "
            "but the call passes 1 (ranks 1)");
  EXPECT_TRUE(launches->all().empty());
}

/// 70000 query heads (and Hq x B = 70000 other ways): grids that CUDA takes,
/// y and z folded where H or B exceeds 65535, for the forward and each
/// backward kernel.
TEST_F(CudaLaunchTest, SeventyThousandHeadsFold) {
  auto forwardOp = parse<mlir::fa::AttentionOp>(kPlain);
  ASSERT_TRUE(forwardOp);
  mlir::FailureOr<mlir::fa::CudaKernelImage> forward =
      mlir::fa::compileCudaKernel(forwardOp, "sm_90a",
                                  withoutWarpSpecialization());
  ASSERT_TRUE(mlir::succeeded(forward));
  rt::Function forwardFn = load(forward->ptx, forward->abi);
  struct Shape {
    int64_t b, hq, hkv;
    unsigned y, z;
  };
  for (Shape s :
       {Shape{1, 70000, 70000, 65535, 2}, Shape{2, 35000, 35000, 35000, 2},
        Shape{70000, 1, 1, 65535, 2}, Shape{1, 65535, 65535, 65535, 1},
        Shape{3, 40000, 10000, 40000, 3}}) {
    launches->clear();
    rt::KernelCall call = forwardCall(s.b, s.hq, s.hkv, 130, 70, 64);
    rt::Status status =
        mlir::fa::launchCudaKernel(forward->abi, forwardFn, call, nullptr);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    std::vector<FaFakeLaunch> all = launches->all();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].grid[0], 3u); // ceil(130 / 64)
    EXPECT_EQ(all[0].grid[1], s.y) << s.b << " x " << s.hq;
    EXPECT_EQ(all[0].grid[2], s.z) << s.b << " x " << s.hq;
  }

  auto gradOp = parse<mlir::fa::AttentionGradOp>(kBackward);
  ASSERT_TRUE(gradOp);
  mlir::FailureOr<mlir::fa::CudaBackwardImage> image =
      mlir::fa::compileCudaBackward(gradOp, "sm_90a");
  ASSERT_TRUE(mlir::succeeded(image));
  rt::CachedKernel kernel;
  kernel.kernels = image->kernels;
  kernel.image = image->ptx;
  modules.push_back(std::make_unique<rt::Module>(
      rt::Module::load(*device, image->ptx).take()));
  mlir::fa::CudaFunctions functions =
      mlir::fa::loadCudaFunctions(kernel, *modules.back()).take();
  launches->clear();
  mlir::fa::CudaBackwardCall call;
  static_cast<rt::KernelCall &>(call) =
      forwardCall(1, 70000, 35000, 10, 20, 64);
  call.workspace = 0x100000;
  rt::Status status =
      mlir::fa::launchCudaBackward(kernel, functions, call, nullptr);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  std::vector<FaFakeLaunch> all = launches->all();
  ASSERT_EQ(all.size(), 3u);
  // dsum, dq_convert over 70000 query heads; dK/dV over 35000 kv heads.
  EXPECT_EQ(all[0].grid[1], 65535u);
  EXPECT_EQ(all[0].grid[2], 2u);
  EXPECT_EQ(all[1].grid[1], 35000u);
  EXPECT_EQ(all[1].grid[2], 1u);
  EXPECT_EQ(all[2].grid[1], 65535u);
  EXPECT_EQ(all[2].grid[2], 2u);

  // Past 65535^2 heads x batch, or 2^31 - 1 query tiles: a clear error.
  rt::KernelCall tooLong = forwardCall(1, 8, 2, int64_t(1) << 40, 70, 64);
  status =
      mlir::fa::launchCudaKernel(forward->abi, forwardFn, tooLong, nullptr);
  ASSERT_TRUE(status.failed());
  EXPECT_NE(status.getMessage().find("kernel fa_forward_0: grid x is "
                                     "tiles(Nq, 64) = 17179869184 CTAs, "
                                     "above CUDA's limit of 2147483647"),
            std::string::npos)
      << status.getMessage();
}

} // namespace
