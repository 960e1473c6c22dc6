//===- FakeDriverTest.cpp - Loading and errors, with stand-in drivers -----===//
//
// What cannot be arranged with a real driver: a missing library, a library
// that is not a driver, no device, a failing cuInit, other GPUs; and the
// exact text of errors. These use FakeCuda.cpp and run everywhere.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"
#include "fa/Runtime/Cuda.h"

#include <gtest/gtest.h>

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

} // namespace
