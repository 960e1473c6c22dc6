//===- FakeDeviceTest.cpp - fa::Kernel on the stand-in driver's devices ---===//
//
// fa.h's GPU path on two devices emulated by the stand-in driver
// (unittests/Runtime/FakeCuda.cpp). main runs the tests again with a
// directory that holds the stand-in as libcuda.so.1 first on
// LD_LIBRARY_PATH, so that the process's driver (inside libfa.so) is the
// stand-in. fa::Kernel then loads and launches FA's real sm_90a PTX there;
// the stand-in runs none of it but records each launch with its context and
// counts every driver call. Checked: a call on cuda:1 loads and launches in
// device 1's context, once per device, and leaves the thread's current
// context as it was; views on two devices are an error naming both; forward
// and backward with a workspace allocate and synchronize nothing (a
// mask_mod's key ranges included); without one the workspace is
// stream-ordered (cuMemAllocAsync / cuMemFreeAsync) and still nothing
// synchronizes.
//
//===----------------------------------------------------------------------===//

#include "../Runtime/FakeCudaLaunches.h"
#include "fa/fa.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// The stand-in driver: $FA_FAKE_CUDA_PATH, else beside this binary, else
/// where the build put it.
std::string fakeCudaPath() {
  if (const char *path = std::getenv("FA_FAKE_CUDA_PATH"); path && *path)
    return path;
  std::string beside =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() /
      "libfa-fake-cuda.so";
  if (access(beside.c_str(), R_OK) == 0)
    return beside;
  return FA_FAKE_CUDA_BUILD_PATH;
}

/// The stand-in as the process loaded it (libcuda.so.1): its records and the
/// context calls the tests make themselves.
struct Fake {
  Fake() : handle(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    if (!handle)
      return;
    launchCount = reinterpret_cast<FaFakeCudaLaunchCountFn>(
        dlsym(handle, "faFakeCudaLaunchCount"));
    getLaunch = reinterpret_cast<FaFakeCudaGetLaunchFn>(
        dlsym(handle, "faFakeCudaGetLaunch"));
    clearLaunches = reinterpret_cast<FaFakeCudaClearLaunchesFn>(
        dlsym(handle, "faFakeCudaClearLaunches"));
    callCount = reinterpret_cast<FaFakeCudaCallCountFn>(
        dlsym(handle, "faFakeCudaCallCount"));
    clearCalls = reinterpret_cast<FaFakeCudaClearCallsFn>(
        dlsym(handle, "faFakeCudaClearCalls"));
    ctxGetCurrent =
        reinterpret_cast<int (*)(void **)>(dlsym(handle, "cuCtxGetCurrent"));
    ctxSetCurrent =
        reinterpret_cast<int (*)(void *)>(dlsym(handle, "cuCtxSetCurrent"));
    primaryCtxRetain = reinterpret_cast<int (*)(void **, int)>(
        dlsym(handle, "cuDevicePrimaryCtxRetain"));
  }
  bool ok() const {
    return launchCount && getLaunch && clearLaunches && callCount &&
           clearCalls && ctxGetCurrent && ctxSetCurrent && primaryCtxRetain;
  }
  void clear() {
    clearLaunches();
    clearCalls();
  }
  std::vector<FaFakeLaunch> launches() {
    std::vector<FaFakeLaunch> all(static_cast<size_t>(launchCount()));
    for (size_t i = 0; i < all.size(); ++i)
      getLaunch(int(i), &all[i]);
    return all;
  }
  /// Allocations and waits on the host: none may happen in a call that has
  /// its workspace.
  int allocations() {
    return callCount("cuMemAlloc_v2") + callCount("cuMemAllocAsync");
  }
  int synchronizations() {
    return callCount("cuStreamSynchronize") + callCount("cuCtxSynchronize") +
           callCount("cuEventSynchronize");
  }
  void *context(int device) {
    void *ctx = nullptr;
    primaryCtxRetain(&ctx, device);
    return ctx;
  }
  void *current() {
    void *ctx = nullptr;
    ctxGetCurrent(&ctx);
    return ctx;
  }

  void *handle;
  FaFakeCudaLaunchCountFn launchCount = nullptr;
  FaFakeCudaGetLaunchFn getLaunch = nullptr;
  FaFakeCudaClearLaunchesFn clearLaunches = nullptr;
  FaFakeCudaCallCountFn callCount = nullptr;
  FaFakeCudaClearCallsFn clearCalls = nullptr;
  int (*ctxGetCurrent)(void **) = nullptr;
  int (*ctxSetCurrent)(void *) = nullptr;
  int (*primaryCtxRetain)(void **, int) = nullptr;
};

constexpr int64_t kB = 1, kH = 2, kN = 128, kD = 64;

/// A bf16 CUDA view [kB, kH, kN, kD] (or the lse, [kB, kH, kN] f32) at a
/// made-up device address: the stand-in reads none of them.
fa::TensorView view(uint64_t address, int device, bool lse = false) {
  fa::TensorView t;
  t.data = reinterpret_cast<void *>(address);
  t.dtype = lse ? fa::DType::F32 : fa::DType::BF16;
  t.shape = lse ? std::vector<int64_t>{kB, kH, kN}
                : std::vector<int64_t>{kB, kH, kN, kD};
  t.device = fa::Device::CUDA;
  t.deviceIndex = device;
  return t;
}

/// A workspace of `bytes` on `device`.
fa::TensorView workspaceView(uint64_t address, size_t bytes, int device) {
  fa::TensorView t;
  t.data = reinterpret_cast<void *>(address);
  t.dtype = fa::DType::I8;
  t.shape = {int64_t(bytes)};
  t.device = fa::Device::CUDA;
  t.deviceIndex = device;
  return t;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const fa::Error &e) {
    return e.what();
  }
  return "(no error)";
}

/// One kernel (causal bf16, D = 64) for all tests: its backward is atomic dQ
/// on sm_90a, so the workspace holds Dsum and the dQ accumulator.
const fa::Kernel &kernel() {
  static const fa::Kernel k = [] {
    fa::AttentionSpec spec;
    spec.dtype = fa::DType::BF16;
    spec.headDim = kD;
    spec.causal = fa::Causal::BottomRight;
    spec.returnLse = true;
    return fa::compile(spec, "sm_90a");
  }();
  return k;
}

class FakeDeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(fake.ok()) << "libcuda.so.1 is not the stand-in driver ("
                           << dlerror() << ")";
    kernel();
    fake.clear();
  }

  /// Forward on `device`: q, k, v, o, lse.
  void forward(int device) {
    fa::TensorView lse = view(0x50000, device, true);
    kernel().forward(view(0x10000, device), view(0x20000, device),
                     view(0x30000, device), view(0x40000, device), &lse);
  }

  /// Backward on `device`, with `workspace` or none.
  void backward(int device, const fa::TensorView *workspace) {
    kernel().backward(view(0x10000, device), view(0x20000, device),
                      view(0x30000, device), view(0x40000, device),
                      view(0x60000, device), view(0x50000, device, true),
                      view(0x70000, device), view(0x80000, device),
                      view(0x90000, device), nullptr, nullptr, 0, nullptr,
                      nullptr, {}, workspace);
  }

  Fake fake;
};

TEST_F(FakeDeviceTest, CallsRunOnTheirTensorsDevice) {
  // The caller's context (torch's current device, say) is device 0's.
  void *first = fake.context(0), *second = fake.context(1);
  ASSERT_NE(first, second);
  ASSERT_EQ(fake.ctxSetCurrent(first), 0);

  forward(1);
  EXPECT_EQ(fake.current(), first);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 1);
  std::vector<FaFakeLaunch> launches = fake.launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_STREQ(launches[0].name, "fa_forward_0");
  EXPECT_EQ(launches[0].context, 1);

  // Loaded once per device.
  fake.clear();
  forward(1);
  forward(0);
  forward(0);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 1);
  launches = fake.launches();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].context, 1);
  EXPECT_EQ(launches[1].context, 0);
  EXPECT_EQ(launches[2].context, 0);

  // The backward's three kernels, on device 1, from a thread with no
  // context.
  ASSERT_EQ(fake.ctxSetCurrent(nullptr), 0);
  fake.clear();
  size_t bytes = kernel().backwardWorkspaceBytes(kB, kH, kN);
  fa::TensorView workspace = workspaceView(0x100000, bytes, 1);
  backward(1, &workspace);
  EXPECT_EQ(fake.current(), nullptr);
  launches = fake.launches();
  ASSERT_EQ(launches.size(), 3u);
  for (const FaFakeLaunch &l : launches)
    EXPECT_EQ(l.context, 1) << l.name;
}

TEST_F(FakeDeviceTest, NoAllocationOrSynchronizationWithAWorkspace) {
  forward(1);
  backward(1, nullptr); // Loads both on device 1 first.
  // Dsum (B Hq Nq f32, rounded up to 256) and the f32 dQ accumulator.
  size_t bytes = kernel().backwardWorkspaceBytes(kB, kH, kN);
  EXPECT_EQ(bytes, 1024u + kB * kH * kN * kD * 4);
  fa::TensorView workspace = workspaceView(0x100000, bytes, 1);
  fake.clear();
  for (int i = 0; i < 3; ++i) {
    forward(1);
    backward(1, &workspace);
  }
  EXPECT_EQ(fake.launches().size(), 3u * 4u);
  EXPECT_EQ(fake.allocations(), 0);
  EXPECT_EQ(fake.callCount("cuMemFree_v2") + fake.callCount("cuMemFreeAsync"),
            0);
  EXPECT_EQ(fake.synchronizations(), 0);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 0);
  // The dsum kernel's Dsum and the dK/dV kernel's accumulator are the
  // workspace's (parameters 9 and 46 of fa_backward_dsum_0 / _dkdv_0).
  std::vector<FaFakeLaunch> launches = fake.launches();
  EXPECT_EQ(launches[1].params[9], 0x100000u);
  EXPECT_EQ(launches[2].params[46], 0x100000u + 1024u);

  // Without a workspace: stream-ordered, allocated and freed once per call,
  // and still no wait.
  fake.clear();
  backward(1, nullptr);
  EXPECT_EQ(fake.callCount("cuMemAllocAsync"), 1);
  EXPECT_EQ(fake.callCount("cuMemFreeAsync"), 1);
  EXPECT_EQ(fake.callCount("cuMemAlloc_v2"), 0);
  EXPECT_EQ(fake.synchronizations(), 0);
}

TEST_F(FakeDeviceTest, KeyRangesInTheForwardsWorkspace) {
  // A document mask_mod: a key-range kernel finds each query tile's keys
  // first, into the forward's workspace.
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = kD;
  spec.captures = {{fa::DType::I32, 1}};
  spec.maskMod = R"mlir(
    %di = tensor.extract %cap0[%q_idx] : tensor<?xi32>
    %dj = tensor.extract %cap0[%kv_idx] : tensor<?xi32>
    %keep = arith.cmpi eq, %di, %dj : i32
    fa.yield %keep : i1
  )mlir";
  fa::Kernel documents = fa::compile(spec, "sm_90a");
  fa::TensorView docs = view(0xa0000, 1);
  docs.dtype = fa::DType::I32;
  docs.shape = {kN};
  auto forwardWith = [&](const fa::TensorView *workspace) {
    documents.forward(view(0x10000, 1), view(0x20000, 1), view(0x30000, 1),
                      view(0x40000, 1), nullptr, nullptr, nullptr, 0, nullptr,
                      {docs}, workspace);
  };
  forwardWith(nullptr); // Loads it on device 1.
  // 256 bytes at least; and none where there is no key-range kernel.
  size_t bytes = documents.forwardWorkspaceBytes(kB, kH, kN);
  EXPECT_GE(bytes, 256u);
  EXPECT_EQ(documents.forwardWorkspaceBytes(kB, kH, 0), 256u);
  EXPECT_EQ(kernel().forwardWorkspaceBytes(kB, kH, kN), 0u);

  fa::TensorView workspace = workspaceView(0x100000, bytes, 1);
  fake.clear();
  forwardWith(&workspace);
  EXPECT_EQ(fake.allocations(), 0);
  EXPECT_EQ(fake.callCount("cuMemFreeAsync"), 0);
  EXPECT_EQ(fake.synchronizations(), 0);
  // The records zeroed on the stream first, for the key-range kernel's
  // atomics.
  EXPECT_EQ(fake.callCount("cuMemsetD32Async"), 1);
  std::vector<FaFakeLaunch> launches = fake.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_STREQ(launches[0].name, "fa_forward_0_key_ranges");
  EXPECT_STREQ(launches[1].name, "fa_forward_0");
  // Both kernels get the workspace's address as the key ranges.
  for (const FaFakeLaunch &l : launches) {
    int found = 0;
    for (int i = 0; i < l.numParams; ++i)
      found += l.paramSizes[i] == 8 && l.params[i] == 0x100000u;
    EXPECT_EQ(found, 1) << l.name;
  }

  // Without one: stream-ordered memory, freed on the stream, no wait.
  fake.clear();
  forwardWith(nullptr);
  EXPECT_EQ(fake.callCount("cuMemAllocAsync"), 1);
  EXPECT_EQ(fake.callCount("cuMemFreeAsync"), 1);
  EXPECT_EQ(fake.callCount("cuMemsetD32Async"), 1);
  EXPECT_EQ(fake.synchronizations(), 0);

  fake.clear();
  fa::TensorView small = workspaceView(0x100000, bytes - 1, 1);
  EXPECT_EQ(errorOf([&] { forwardWith(&small); }),
            "fa::Kernel::forward: workspace has " + std::to_string(bytes - 1) +
                " bytes, but this call needs " + std::to_string(bytes) +
                " (forwardWorkspaceBytes)");
  fa::TensorView misaligned = workspaceView(0x100080, bytes, 1);
  EXPECT_EQ(errorOf([&] { forwardWith(&misaligned); }),
            "fa::Kernel::forward: workspace must be 256-byte aligned");
  fa::TensorView elsewhere = workspaceView(0x100000, bytes, 0);
  EXPECT_EQ(errorOf([&] { forwardWith(&elsewhere); }),
            "fa::Kernel::forward: workspace is on cuda:0 but q is on cuda:1");
  EXPECT_EQ(errorOf([&] { documents.forwardWorkspaceBytes(1, -1, 8); }),
            "fa::Kernel::forwardWorkspaceBytes: sizes must be >= 0, got "
            "batch 1, headsQ -1, seqQ 8");
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(FakeDeviceTest, TensorsOnTwoDevicesAreAnError) {
  fa::TensorView q = view(0x10000, 0), k = view(0x20000, 1),
                 v = view(0x30000, 0), o = view(0x40000, 0),
                 lse = view(0x50000, 0, true);
  EXPECT_EQ(errorOf([&] { kernel().forward(q, k, v, o, &lse); }),
            "fa::Kernel::forward: k is on cuda:1 but q is on cuda:0");
  fa::TensorView lse1 = view(0x50000, 1, true);
  EXPECT_EQ(
      errorOf([&] { kernel().forward(q, view(0x20000, 0), v, o, &lse1); }),
      "fa::Kernel::forward: lse is on cuda:1 but q is on cuda:0");
  EXPECT_EQ(errorOf([&] {
              kernel().backward(q, view(0x20000, 0), v, o, view(0x60000, 0),
                                lse, view(0x70000, 1), view(0x80000, 0),
                                view(0x90000, 0));
            }),
            "fa::Kernel::backward: dq is on cuda:1 but q is on cuda:0");
  size_t bytes = kernel().backwardWorkspaceBytes(kB, kH, kN);
  fa::TensorView elsewhere = workspaceView(0x100000, bytes, 0);
  EXPECT_EQ(errorOf([&] { backward(1, &elsewhere); }),
            "fa::Kernel::backward: workspace is on cuda:0 but q is on "
            "cuda:1");
  fa::TensorView small = workspaceView(0x100000, bytes - 1, 1);
  EXPECT_EQ(errorOf([&] { backward(1, &small); }),
            "fa::Kernel::backward: workspace has " + std::to_string(bytes - 1) +
                " bytes, but this call needs " + std::to_string(bytes) +
                " (backwardWorkspaceBytes)");
  fa::TensorView misaligned = workspaceView(0x100010, bytes, 1);
  EXPECT_EQ(errorOf([&] { backward(1, &misaligned); }),
            "fa::Kernel::backward: workspace must be 256-byte aligned");
  EXPECT_EQ(errorOf([&] { forward(2); }),
            "fa::Kernel::forward: no CUDA device 2 (there are 2)");
  EXPECT_EQ(errorOf([&] { forward(-1); }),
            "fa::Kernel::forward: q is on cuda:-1, which is no device");
  EXPECT_TRUE(fake.launches().empty());
}

TEST_F(FakeDeviceTest, ModulesLoadThePtxAsAWholeProgram) {
  // Each device loads the PTX itself (cuModuleLoadDataEx: the driver
  // compiles it as one program and keeps the SASS in its own cache), never
  // a cubin of the driver's linker: cuLink* compiles for separate linking,
  // where ptxas ignores setmaxnreg and serializes the wgmmas (0.65-0.75x
  // on the H200, performance.md "persistent").
  fa::AttentionSpec spec;
  spec.dtype = fa::DType::BF16;
  spec.headDim = kD;
  spec.window = {32, 0};
  fa::Kernel windowed = fa::compile(spec, "sm_90a");
  auto forwardOn = [&](int device) {
    windowed.forward(view(0x10000, device), view(0x20000, device),
                     view(0x30000, device), view(0x40000, device));
  };
  forwardOn(0);
  forwardOn(0);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 1);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx(cubin)"), 0);
  forwardOn(1);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 2);
  EXPECT_EQ(fake.callCount("cuLinkCreate_v2"), 0);
  EXPECT_EQ(fake.callCount("cuLinkComplete"), 0);
  ASSERT_EQ(fake.launches().size(), 3u);
}

TEST_F(FakeDeviceTest, CompileForADevice) {
  fa::AttentionSpec spec;
  spec.headDim = 64;
  EXPECT_EQ(fa::compile(spec, "cuda:1").target(), "sm_90a");
  EXPECT_EQ(errorOf([&] { fa::compile(spec, "cuda:7"); }),
            "fa::compile: target 'cuda:7': no CUDA device 7 (there are 2)");
}

} // namespace

/// A bias the producer's TMA copies block by block (fa-bias-tiles) comes
/// through its tensor map; one TMA cannot copy (its keys transposed, or rows
/// of 130 bf16 = 260 bytes) runs the same op compiled with one load a score,
/// compiled on the first such call and kept.
TEST_F(FakeDeviceTest, ABiasTmaCannotCopyRunsTheFallbackKernel) {
  static const fa::Kernel biased = [] {
    fa::AttentionSpec spec;
    spec.dtype = fa::DType::BF16;
    spec.headDim = kD;
    spec.bias = true;
    spec.biasDType = fa::DType::BF16;
    spec.biasBroadcast = {true, false, false, false};
    return fa::compile(spec, "sm_90a");
  }();
  auto run = [&](std::vector<int64_t> shape, std::vector<int64_t> strides) {
    fa::TensorView bias = view(0x60000, 0);
    bias.shape = std::move(shape);
    bias.strides = std::move(strides);
    biased.forward(view(0x10000, 0), view(0x20000, 0), view(0x30000, 0),
                   view(0x40000, 0), nullptr, &bias);
  };
  fake.clear();
  // Contiguous [1, H, N, N]: Q's, K's, the bias's and V's maps.
  run({1, kH, kN, kN}, {});
  EXPECT_EQ(fake.callCount("cuTensorMapEncodeTiled"), 4);
  EXPECT_EQ(fake.launches().size(), 1u);
  int loads = fake.callCount("cuModuleLoadDataEx");

  // Keys transposed: the fallback, loaded once, with no bias map.
  fake.clear();
  run({1, kH, kN, kN}, {kH * kN * kN, kN * kN, 1, kN});
  EXPECT_EQ(fake.callCount("cuTensorMapEncodeTiled"), 3);
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 1);
  ASSERT_EQ(fake.launches().size(), 1u);
  EXPECT_STREQ(fake.launches()[0].name, "fa_forward_0");

  // Rows of 260 bytes: the same fallback, not loaded again; a contiguous
  // bias again takes the TMA kernel, already loaded.
  fake.clear();
  run({1, kH, kN, kN}, {kH * kN * 130, kN * 130, 130, 1});
  run({1, kH, kN, kN}, {});
  EXPECT_EQ(fake.callCount("cuModuleLoadDataEx"), 0);
  EXPECT_EQ(fake.callCount("cuTensorMapEncodeTiled"), 3 + 4);
  EXPECT_EQ(fake.launches().size(), 2u);
  EXPECT_EQ(loads, 1);
}

int main(int argc, char **argv) {
  // fa::Kernel uses the process's driver, which dlopens "libcuda.so.1" by
  // name: run again with the stand-in under that name first on
  // LD_LIBRARY_PATH (which the loader reads when the process starts).
  if (!std::getenv("FA_FAKE_DEVICE_TEST_CHILD")) {
    std::filesystem::path dir =
        std::filesystem::read_symlink("/proc/self/exe").parent_path() /
        "FakeDeviceTest.d";
    std::error_code error;
    std::filesystem::create_directories(dir / "lib", error);
    // Made beside, then renamed over: tests of this binary start in
    // parallel (ctest -j).
    std::filesystem::path link = dir / "lib" / "libcuda.so.1";
    std::filesystem::path made = link.string() + "." + std::to_string(getpid());
    std::filesystem::create_symlink(fakeCudaPath(), made, error);
    if (!error)
      std::filesystem::rename(made, link, error);
    if (error) {
      std::fprintf(stderr, "cannot link %s: %s\n", link.c_str(),
                   error.message().c_str());
      return 1;
    }
    std::string path = (dir / "lib").string();
    if (const char *old = std::getenv("LD_LIBRARY_PATH"); old && *old)
      path += std::string(":") + old;
    setenv("LD_LIBRARY_PATH", path.c_str(), 1);
    setenv("FA_FAKE_DEVICE_TEST_CHILD", "1", 1);
    setenv("FA_FAKE_CUDA_DEVICES", "2", 1);
    setenv("FA_FAKE_CUDA_CC", "90", 1);
    // Its own kernel cache, kept between runs (the PTX does not change
    // with the driver).
    setenv("FA_CACHE_DIR", (dir / "cache").c_str(), 1);
    execv("/proc/self/exe", argv);
    std::perror("execv /proc/self/exe");
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
