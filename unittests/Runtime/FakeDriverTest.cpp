//===- FakeDriverTest.cpp - Loading and errors, with stand-in drivers -----===//
//
// What cannot be arranged with a real driver: a missing library, a library
// that is not a driver, no device, a failing cuInit, other GPUs; and the
// exact text of errors. These use FakeCuda.cpp and run everywhere.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaLaunches.h"
#include "TestSupport.h"
#include "fa/Runtime/Cuda.h"
#include "fa/Runtime/KernelAbi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <tuple>
#include <unistd.h>

using namespace fa::runtime;
using namespace fa::runtime::test;

namespace {

bool startsWith(const std::string &text, const std::string &prefix) {
  return text.rfind(prefix, 0) == 0;
}

/// Sets (or with nullopt, unsets) an environment variable for a scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::optional<std::string> saved;
};

/// The stand-in driver's count of live device allocations.
int liveAllocations() {
  void *handle = dlopen(fakeCudaPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  auto count =
      reinterpret_cast<int (*)()>(dlsym(handle, "faFakeCudaLiveAllocations"));
  int live = count ? count() : -1;
  dlclose(handle);
  return live;
}

TEST(DriverLoading, MissingLibrary) {
  std::unique_ptr<Driver> driver = Driver::load("libfa-no-such-driver.so.1");
  EXPECT_FALSE(driver->available());
  EXPECT_TRUE(startsWith(driver->unavailableReason(),
                         "libfa-no-such-driver.so.1 not found: "))
      << driver->unavailableReason();
  EXPECT_EQ(driver->getDeviceCount(), 0);
  Expected<Device> device = driver->getDevice(0);
  ASSERT_TRUE(device.failed());
  EXPECT_TRUE(startsWith(device.getMessage(),
                         "CUDA is unavailable: libfa-no-such-driver.so.1 not "
                         "found: "))
      << device.getMessage();
  // Without a library, errors are still described.
  EXPECT_EQ(driver->describe(218), "CUDA error 218");
}

TEST(DriverLoading, LibraryThatIsNotADriver) {
  std::unique_ptr<Driver> driver = Driver::load("libm.so.6");
  EXPECT_FALSE(driver->available());
  EXPECT_TRUE(startsWith(driver->unavailableReason(),
                         "libm.so.6 lacks cuInit, cuDriverGetVersion, "))
      << driver->unavailableReason();
}

TEST(GpuRequired, FollowsFA_REQUIRE_GPU) {
  {
    ScopedEnv env("FA_REQUIRE_GPU", "1");
    EXPECT_TRUE(gpuRequired());
  }
  {
    ScopedEnv env("FA_REQUIRE_GPU", "0");
    EXPECT_FALSE(gpuRequired());
  }
  // Unset (or any other value): whether the kernel driver lists a GPU.
  ScopedEnv env("FA_REQUIRE_GPU", std::nullopt);
  bool listed = access("/dev/nvidia0", F_OK) == 0;
  if (DIR *gpus = opendir("/proc/driver/nvidia/gpus")) {
    for (dirent *entry; (entry = readdir(gpus));)
      listed |= entry->d_name[0] != '.';
    closedir(gpus);
  }
  EXPECT_EQ(gpuRequired(), listed);
}

TEST(DriverLoading, NoDevice) {
  {
    ScopedEnv devices("FA_FAKE_CUDA_DEVICES", "0");
    std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
    EXPECT_FALSE(driver->available());
    EXPECT_EQ(driver->unavailableReason(), "no CUDA device");
    EXPECT_EQ(driver->checkAvailable().getMessage(),
              "CUDA is unavailable: no CUDA device");
  }
  ScopedEnv init("FA_FAKE_CUDA_INIT_RESULT", "100");
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  EXPECT_EQ(driver->unavailableReason(), "no CUDA device");
}

TEST(DriverLoading, InitFailure) {
  {
    ScopedEnv init("FA_FAKE_CUDA_INIT_RESULT", "3");
    std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
    EXPECT_EQ(driver->unavailableReason(),
              "cuInit failed: CUDA_ERROR_NOT_INITIALIZED (initialization "
              "error)");
  }
  ScopedEnv init("FA_FAKE_CUDA_INIT_RESULT", "999");
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  EXPECT_EQ(driver->unavailableReason(), "cuInit failed: CUDA error 999");
}

TEST(DriverLoading, ProcessDriverIsOneObject) {
  Driver &driver = Driver::get();
  EXPECT_EQ(&driver, &Driver::get());
  EXPECT_EQ(driver.getLibrary(), "libcuda.so.1");
  // Either it works or it says why, never both.
  EXPECT_NE(driver.available(), !driver.unavailableReason().empty());
  if (!driver.available()) {
    Expected<Device> device = Device::get(0);
    ASSERT_TRUE(device.failed());
    EXPECT_TRUE(startsWith(device.getMessage(), "CUDA is unavailable: "))
        << device.getMessage();
  }
}

TEST(FakeDriver, ChipOfOtherGpus) {
  using Case = std::tuple<const char *, const char *, const char *>;
  for (auto [cc, arch, chip] :
       {Case{"80", "sm_80", "sm_80"}, Case{"86", "sm_86", "sm_86"},
        Case{"90", "sm_90", "sm_90a"}, Case{"100", "sm_100", "sm_100"}}) {
    ScopedEnv env("FA_FAKE_CUDA_CC", cc);
    std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
    Expected<Device> device = driver->getDevice(0);
    ASSERT_TRUE(device.ok()) << device.getMessage();
    EXPECT_EQ(device->getArch(), arch);
    EXPECT_EQ(device->getChip(), chip);
  }
}

TEST(FakeDriver, DeviceOrdinals) {
  ScopedEnv env("FA_FAKE_CUDA_DEVICES", "2");
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  ASSERT_EQ(driver->getDeviceCount(), 2);
  Expected<Device> second = driver->getDevice(1);
  ASSERT_TRUE(second.ok()) << second.getMessage();
  EXPECT_EQ(second->getName(), "FA Fake GPU 1");
  Expected<Device> first = driver->getDevice(0);
  ASSERT_TRUE(first.ok());
  EXPECT_NE(first->getContext(), second->getContext());
  EXPECT_EQ(driver->getDevice(2).getMessage(),
            "no CUDA device 2 (there are 2)");
  EXPECT_EQ(driver->getDevice(-1).getMessage(),
            "no CUDA device -1 (there are 2)");
}

TEST(FakeDriver, ExactErrorMessages) {
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  ASSERT_TRUE(driver->available()) << driver->unavailableReason();
  Device device = driver->getDevice(0).take();
  EXPECT_EQ(driver->describe(218),
            "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)");
  EXPECT_EQ(driver->check(2, "cuMemAlloc_v2").getMessage(),
            "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_TRUE(driver->check(0, "cuInit").ok());

  Expected<Module> bad = Module::load(device, kBadPtx);
  ASSERT_TRUE(bad.failed());
  EXPECT_EQ(bad.getMessage(),
            "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
            "compilation failed) loading " +
                std::to_string(std::string(kBadPtx).size()) +
                " bytes of PTX on device 0 (FA Fake GPU 0, sm_90)\n"
                "JIT error log:\n"
                "ptxas application ptx input, line 1; error   : fake syntax "
                "error\n"
                "ptxas fatal   : Ptx assembly aborted due to errors");

  Expected<DeviceBuffer> huge = DeviceBuffer::allocate(device, size_t(1) << 41);
  ASSERT_TRUE(huge.failed());
  EXPECT_EQ(huge.getMessage(),
            "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) "
            "allocating 2199023255552 bytes on device 0 (FA Fake GPU 0, "
            "sm_90)");

  Expected<Module> module = Module::load(device, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  EXPECT_EQ(module->getJitInfoLog(), "ptxas info    : fake: 1 entries");
  Function function = Function::get(*module, "add_one").take();
  void *args[] = {nullptr, nullptr};
  EXPECT_EQ(launch(function, {1, 1, 1}, {32, 1, 1}, 100000, nullptr, args)
                .getMessage(),
            "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid "
            "argument) in launch of kernel 'add_one' (grid 1x1x1, block "
            "32x1x1, 100000 bytes of dynamic shared memory); above 49152 "
            "bytes, call Function::setMaxDynamicSharedMemory first");
}

TEST(FakeDriver, ObjectsReleaseWhatTheyHold) {
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  Device device = driver->getDevice(0).take();
  int before = liveAllocations();
  ASSERT_GE(before, 0);
  {
    DeviceBuffer a = DeviceBuffer::allocate(device, 64).take();
    DeviceBuffer b = DeviceBuffer::allocate(device, 128).take();
    EXPECT_EQ(liveAllocations(), before + 2);
    a = std::move(b); // Frees a's memory, takes b's.
    EXPECT_EQ(liveAllocations(), before + 1);
    EXPECT_EQ(a.getSize(), 128u);
    EXPECT_EQ(b.getPointer(), 0u);
    DeviceBuffer c(std::move(a));
    EXPECT_EQ(liveAllocations(), before + 1);
  }
  EXPECT_EQ(liveAllocations(), before);

  Expected<Module> module = Module::load(device, kAddOnePtx);
  ASSERT_TRUE(module.ok());
  Module moved = module.take();
  EXPECT_NE(moved.getHandle(), nullptr);
  EXPECT_TRUE(moved.unload().ok());
  EXPECT_EQ(moved.getHandle(), nullptr);
  EXPECT_TRUE(moved.unload().ok());
  EXPECT_TRUE(Function::get(moved, "add_one").failed());

  Event start = Event::create(device).take();
  Event end = Event::create(device).take();
  // Unrecorded events have no elapsed time.
  Expected<float> none = Event::elapsedMs(start, end);
  ASSERT_TRUE(none.failed());
  EXPECT_TRUE(startsWith(none.getMessage(), "cuEventElapsedTime failed: "))
      << none.getMessage();
  Event other = std::move(end);
  EXPECT_EQ(end.getHandle(), nullptr);
}

/// The stand-in, like CUDA, runs a kernel only in the context its module was
/// loaded in; launch() makes that one current whatever was.
TEST(FakeDriver, KernelsRunInTheirModulesContext) {
  ScopedEnv env("FA_FAKE_CUDA_DEVICES", "2");
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  Device first = driver->getDevice(0).take();
  Device second = driver->getDevice(1).take();
  Module module = Module::load(second, kAddOnePtx).take();
  Function addOne = Function::get(module, "add_one").take();
  int n = 0;
  uint64_t pointer = 0;
  void *args[] = {&pointer, &n};
  ASSERT_TRUE(first.makeCurrent().ok());
  EXPECT_EQ(driver->api().cuLaunchKernel(addOne.getHandle(), 1, 1, 1, 1, 1, 1,
                                         0, nullptr, args, nullptr),
            cu::CUDA_ERROR_INVALID_HANDLE);
  ASSERT_TRUE(first.makeCurrent().ok());
  Status status = launch(addOne, {1, 1, 1}, {1, 1, 1}, 0, nullptr, args);
  EXPECT_TRUE(status.ok()) << status.getMessage();
}

/// encodeTensorMap passes the request and FA's constants to the driver's
/// cuTensorMapEncodeTiled, into the caller's 128 bytes.
TEST(FakeDriver, EncodesTensorMaps) {
  std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  ASSERT_TRUE(driver->available()) << driver->unavailableReason();
  void *handle = dlopen(fakeCudaPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr);
  auto getCall = reinterpret_cast<FaFakeCudaGetTensorMapCallFn>(
      dlsym(handle, "faFakeCudaGetTensorMapCall"));
  auto clearCalls = reinterpret_cast<FaFakeCudaClearCallsFn>(
      dlsym(handle, "faFakeCudaClearCalls"));
  auto callCount = reinterpret_cast<FaFakeCudaCallCountFn>(
      dlsym(handle, "faFakeCudaCallCount"));
  ASSERT_TRUE(getCall && clearCalls && callCount);
  clearCalls();
  FaFakeTensorMapCall call{};
  EXPECT_EQ(getCall(&call), 0);

  // k of [B = 2, Hkv = 2, Nk = 200, D = 128], rows padded to 136.
  TensorMapRequest request;
  request.data = 0x7f0000020000;
  const uint64_t dims[5] = {64, 200, 2, 2, 2};
  const uint64_t strides[4] = {272, 128, 54400, 108800};
  const uint32_t box[5] = {64, 8, 2, 1, 1};
  std::copy(dims, dims + 5, request.dims);
  std::copy(strides, strides + 4, request.strides);
  std::copy(box, box + 5, request.box);
  struct alignas(128) {
    uint64_t words[16];
  } map = {};
  Status status = encodeTensorMap(request, &map, *driver);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(callCount("cuTensorMapEncodeTiled"), 1);
  ASSERT_EQ(getCall(&call), 1);
  EXPECT_EQ(call.map, reinterpret_cast<uintptr_t>(&map));
  EXPECT_EQ(call.dataType, 1); // CU_TENSOR_MAP_DATA_TYPE_UINT16
  EXPECT_EQ(call.rank, 5u);
  EXPECT_EQ(call.globalAddress, 0x7f0000020000u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(call.globalDim[i], dims[i]) << i;
    EXPECT_EQ(call.boxDim[i], box[i]) << i;
    EXPECT_EQ(call.elementStrides[i], 1u) << i;
  }
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(call.globalStrides[i], strides[i]) << i;
  EXPECT_EQ(call.interleave, 0);  // CU_TENSOR_MAP_INTERLEAVE_NONE
  EXPECT_EQ(call.swizzle, 3);     // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(call.l2Promotion, 2); // CU_TENSOR_MAP_L2_PROMOTION_L2_128B
  EXPECT_EQ(call.oobFill, 0);     // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
  // What the stand-in wrote (FakeCuda.cpp): its mark and the request.
  const uint64_t written[16] = {0xFA7E9A9000000005ull,
                                0x7f0000020000,
                                64,
                                200,
                                2,
                                2,
                                2,
                                272,
                                128,
                                54400,
                                108800,
                                64,
                                8,
                                2,
                                1,
                                1};
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(map.words[i], written[i]) << i;

  // The driver's refusal names the error and the map.
  request.strides[0] = 264;
  Status refused = encodeTensorMap(request, &map, *driver);
  EXPECT_EQ(refused.getMessage(),
            "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE (invalid "
            "argument) encoding the tensor map of 0x7f0000020000 with dims "
            "(64, 200, 2, 2, 2), byte strides (264, 128, 54400, 108800), box "
            "(64, 8, 2, 1, 1)");
  EXPECT_EQ(callCount("cuTensorMapEncodeTiled"), 2);

  // ParamBuffer::build with the driver's encoder (the launchers': the
  // function's device's driver; here the stand-in).
  static Driver *fake = nullptr;
  fake = driver.get();
  TensorMapEncoder encoder = [](const TensorMapRequest &r, void *m) {
    return encodeTensorMap(r, m, *fake);
  };
  KernelAbi abi;
  abi.name = "fa_tma";
  abi.grid = {GridAxis::tilesNk(64), GridAxis::hkv(), GridAxis::batch()};
  abi.threads = 128;
  abi.params = {KernelParam::ofSize(AbiSize::Hkv),
                KernelParam::tensorMap(AbiTensor::K, 128, 8),
                KernelParam::ofSize(AbiSize::B)};
  KernelCall values;
  values.batch = 2;
  values.headsQ = 8;
  values.headsKV = 2;
  values.seqQ = 300;
  values.seqKV = 200;
  values.set(AbiTensor::K, 0x7f0000020000, {2 * 200 * 136, 200 * 136, 136});
  Expected<ParamBuffer> params = ParamBuffer::build(abi, values, encoder);
  ASSERT_TRUE(params.ok()) << params.getMessage();
  EXPECT_EQ(callCount("cuTensorMapEncodeTiled"), 3);
  ASSERT_EQ(getCall(&call), 1);
  EXPECT_EQ(call.map, reinterpret_cast<uintptr_t>(params->getArgs()[1]));
  EXPECT_EQ(std::memcmp(params->getArgs()[1], written, 128), 0);
  dlclose(handle);
}

} // namespace
