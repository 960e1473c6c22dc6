//===- CudaTest.cpp - The CUDA runtime against a driver -------------------===//
//
// Each DriverTest runs twice: against the real driver (libcuda.so.1, skipped
// with the reason where it is unavailable: no driver or no GPU; failed
// instead when FA_REQUIRE_GPU=1) and against the stand-in driver of
// FakeCuda.cpp, which runs everywhere.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Cuda.h"
#include "GpuTest.h"
#include "TestSupport.h"
#include "fa/Runtime/KernelCache.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace fa::runtime;
using namespace fa::runtime::test;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

Driver &fakeDriver() {
  static std::unique_ptr<Driver> driver = Driver::load(fakeCudaPath());
  return *driver;
}

class DriverTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    bool real = GetParam() == "cuda";
    driver = real ? &Driver::get() : &fakeDriver();
    if (!driver->available()) {
      if (!real)
        FAIL() << "the stand-in driver did not load: "
               << driver->unavailableReason();
      // Where a GPU is, a driver that does not load is a failure.
      FA_GPU_UNAVAILABLE(driver->unavailableReason());
    }
    Expected<Device> found = driver->getDevice(0);
    ASSERT_TRUE(found.ok()) << found.getMessage();
    device.emplace(found.take());
  }

  /// Runs add_one over `n` floats i * 0.5 and checks each became i * 0.5 + 1.
  void runAddOne(const Function &function, int n) {
    std::vector<float> host(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      host[size_t(i)] = float(i) * 0.5f;
    Expected<DeviceBuffer> buffer =
        DeviceBuffer::allocate(*device, host.size() * sizeof(float));
    ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
    Status status =
        buffer->copyFromHost(host.data(), host.size() * sizeof(float));
    ASSERT_TRUE(status.ok()) << status.getMessage();

    uint64_t pointer = buffer->getPointer();
    void *args[] = {&pointer, &n};
    unsigned blocks = unsigned((n + 255) / 256);
    status = launch(function, {blocks, 1, 1}, {256, 1, 1}, 0, nullptr, args);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    status = device->synchronize();
    ASSERT_TRUE(status.ok()) << status.getMessage();

    std::vector<float> result(host.size(), -1.0f);
    status = buffer->copyToHost(result.data(), result.size() * sizeof(float));
    ASSERT_TRUE(status.ok()) << status.getMessage();
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(result[size_t(i)], float(i) * 0.5f + 1.0f) << "element " << i;
  }

  Driver *driver = nullptr;
  std::optional<Device> device;
};

TEST_P(DriverTest, DeviceQuery) {
  EXPECT_GT(driver->getDeviceCount(), 0);
  EXPECT_GE(driver->getVersion(), 11000);
  EXPECT_EQ(driver->unavailableReason(), "");
  EXPECT_TRUE(driver->checkAvailable().ok());
  EXPECT_EQ(device->getOrdinal(), 0);
  EXPECT_FALSE(device->getName().empty());
  EXPECT_GE(device->getComputeCapabilityMajor(), 5);
  std::string arch = device->getArch();
  EXPECT_EQ(arch, "sm_" + std::to_string(device->getComputeCapabilityMajor()) +
                      std::to_string(device->getComputeCapabilityMinor()));
  if (device->getComputeCapabilityMajor() == 9) {
    EXPECT_EQ(device->getChip(), arch + "a");
  } else {
    EXPECT_EQ(device->getChip(), arch);
  }
  EXPECT_GT(device->getSMCount(), 0);
  EXPECT_GE(device->getMaxThreadsPerBlock(), 1024);
  EXPECT_EQ(device->getMaxSharedMemoryPerBlock(), 48 * 1024);
  EXPECT_GE(device->getMaxSharedMemoryPerBlockOptin(),
            device->getMaxSharedMemoryPerBlock());
  EXPECT_GT(device->getL2CacheBytes(), 0);
  EXPECT_GT(device->getTotalMemoryBytes(), size_t(1) << 30);
  EXPECT_NE(device->getContext(), nullptr);
  std::printf("[ device   ] %s: %s (%s), %d SMs, %d KiB shared (optin), "
              "%d MiB L2, %zu GiB, driver %d\n",
              GetParam().c_str(), device->getName().c_str(),
              device->getChip().c_str(), device->getSMCount(),
              device->getMaxSharedMemoryPerBlockOptin() / 1024,
              device->getL2CacheBytes() >> 20,
              device->getTotalMemoryBytes() >> 30, driver->getVersion());

  // The same device again comes from the cache, with the same context.
  Expected<Device> again = driver->getDevice(0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->getContext(), device->getContext());
  Expected<Device> missing = driver->getDevice(driver->getDeviceCount());
  ASSERT_TRUE(missing.failed());
  EXPECT_TRUE(contains(missing.getMessage(), "no CUDA device"))
      << missing.getMessage();
}

TEST_P(DriverTest, AllocCopyRoundTrip) {
  constexpr size_t kBytes = 1 << 20;
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*device, kBytes);
  ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
  EXPECT_EQ(buffer->getSize(), kBytes);
  EXPECT_NE(buffer->getPointer(), 0u);

  std::vector<unsigned char> data(kBytes), back(kBytes);
  for (size_t i = 0; i < kBytes; ++i)
    data[i] = static_cast<unsigned char>(i * 131 + 7);
  ASSERT_TRUE(buffer->copyFromHost(data.data(), kBytes).ok());
  ASSERT_TRUE(buffer->copyToHost(back.data(), kBytes).ok());
  EXPECT_EQ(back, data);

  // Parts, at offsets.
  std::vector<unsigned char> part(100, 0x5a);
  ASSERT_TRUE(buffer->copyFromHost(part.data(), part.size(), 1000).ok());
  std::vector<unsigned char> window(300);
  ASSERT_TRUE(buffer->copyToHost(window.data(), window.size(), 900).ok());
  for (size_t i = 0; i < window.size(); ++i)
    ASSERT_EQ(window[i], i >= 100 && i < 200 ? 0x5a : data[900 + i]) << i;

  ASSERT_TRUE(buffer->fill(0xab).ok());
  ASSERT_TRUE(buffer->copyToHost(back.data(), kBytes).ok());
  EXPECT_EQ(back, std::vector<unsigned char>(kBytes, 0xab));

  // Overruns are refused before reaching the driver.
  Status overrun = buffer->copyToHost(back.data(), 2, kBytes - 1);
  ASSERT_TRUE(overrun.failed());
  EXPECT_TRUE(contains(overrun.getMessage(), "overruns"))
      << overrun.getMessage();
  EXPECT_TRUE(buffer->copyFromHost(data.data(), 1, kBytes + 1).failed());

  // An empty buffer is a null one.
  Expected<DeviceBuffer> empty = DeviceBuffer::allocate(*device, 0);
  ASSERT_TRUE(empty.ok()) << empty.getMessage();
  EXPECT_EQ(empty->getPointer(), 0u);
  EXPECT_TRUE(empty->copyFromHost(data.data(), 0).ok());

  // Moving hands the memory over; release frees it once.
  DeviceBuffer moved = buffer.take();
  EXPECT_EQ(buffer->getPointer(), 0u);
  EXPECT_TRUE(moved.release().ok());
  EXPECT_TRUE(moved.release().ok());
}

/// Stream-ordered memory: allocated and freed on a stream without waiting,
/// usable by what the stream runs in between.
TEST_P(DriverTest, StreamOrderedBuffer) {
  Expected<Module> module = Module::load(*device, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  Function addOne = Function::get(*module, "add_one").take();
  int n = 1000;
  Expected<StreamBuffer> buffer =
      StreamBuffer::allocate(*device, n * sizeof(float), nullptr);
  ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
  EXPECT_EQ(buffer->getSize(), n * sizeof(float));
  uint64_t pointer = buffer->getPointer();
  ASSERT_NE(pointer, 0u);
  void *args[] = {&pointer, &n};
  ASSERT_TRUE(launch(addOne, {4, 1, 1}, {256, 1, 1}, 0, nullptr, args).ok());
  StreamBuffer moved = buffer.take();
  EXPECT_EQ(buffer->getPointer(), 0u);
  EXPECT_TRUE(moved.release().ok());
  EXPECT_TRUE(moved.release().ok());
  EXPECT_TRUE(device->synchronize().ok());
  EXPECT_EQ(StreamBuffer::allocate(*device, 0, nullptr).getMessage(),
            "cannot allocate 0 bytes on a stream");
}

/// ScopedContext puts back whatever context the thread had: none, or
/// another.
TEST_P(DriverTest, ScopedContextRestores) {
  const cu::Api &cu = driver->api();
  std::thread([&] {
    cu::Context current = nullptr;
    {
      ScopedContext scope(*device);
      ASSERT_TRUE(scope.getStatus().ok()) << scope.getStatus().getMessage();
      ASSERT_EQ(cu.cuCtxGetCurrent(&current), cu::CUDA_SUCCESS);
      EXPECT_EQ(current, device->getContext());
    }
    ASSERT_EQ(cu.cuCtxGetCurrent(&current), cu::CUDA_SUCCESS);
    EXPECT_EQ(current, nullptr);
    ASSERT_TRUE(device->makeCurrent().ok());
    {
      ScopedContext scope(*device);
      EXPECT_TRUE(scope.getStatus().ok());
    }
    ASSERT_EQ(cu.cuCtxGetCurrent(&current), cu::CUDA_SUCCESS);
    EXPECT_EQ(current, device->getContext());
  }).join();
}

TEST_P(DriverTest, QueryPointer) {
  Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*device, 4096);
  ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
  Expected<PointerInfo> info = queryPointer(buffer->getPointer(), *driver);
  ASSERT_TRUE(info.ok()) << info.getMessage();
  EXPECT_EQ(info->memoryType, PointerInfo::MemoryType::Device);
  EXPECT_EQ(info->deviceOrdinal, 0);

  // Plain host memory is unknown to the driver (or, where the driver manages
  // all host memory (HMM), not device memory).
  int local = 0;
  Expected<PointerInfo> host =
      queryPointer(reinterpret_cast<uintptr_t>(&local), *driver);
  if (host.failed()) {
    EXPECT_TRUE(contains(host.getMessage(), "cuPointerGetAttribute"))
        << host.getMessage();
  } else {
    EXPECT_NE(host->memoryType, PointerInfo::MemoryType::Device);
  }
}

TEST_P(DriverTest, LoadAndLaunchPtx) {
  Expected<Module> module = Module::load(*device, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  std::printf("[ jit log  ] %s\n", module->getJitInfoLog().c_str());
  Expected<Function> function = Function::get(*module, "add_one");
  ASSERT_TRUE(function.ok()) << function.getMessage();
  EXPECT_EQ(function->getName(), "add_one");

  Expected<Event> start = Event::create(*device);
  ASSERT_TRUE(start.ok()) << start.getMessage();
  Expected<Event> end = Event::create(*device);
  ASSERT_TRUE(end.ok()) << end.getMessage();
  ASSERT_TRUE(start->record().ok());
  runAddOne(*function, 1000);
  runAddOne(*function, 1);
  ASSERT_TRUE(end->record().ok());
  Expected<float> ms = Event::elapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.getMessage();
  EXPECT_GE(*ms, 0.0f);

  Expected<Function> missing = Function::get(*module, "no_such_kernel");
  ASSERT_TRUE(missing.failed());
  EXPECT_TRUE(contains(missing.getMessage(), "kernel 'no_such_kernel'"))
      << missing.getMessage();
  EXPECT_TRUE(contains(missing.getMessage(),
                       "cuModuleGetFunction failed: CUDA_ERROR_NOT_FOUND"))
      << missing.getMessage();

  // The image need not end with a NUL: a view into a larger buffer works.
  std::string padded = std::string(kAddOnePtx) + "garbage after the view";
  Expected<Module> fromView = Module::load(
      *device,
      std::string_view(padded).substr(0, std::string(kAddOnePtx).size()));
  ASSERT_TRUE(fromView.ok()) << fromView.getMessage();
}

TEST_P(DriverTest, BadPtxCarriesTheJitLog) {
  Expected<Module> module = Module::load(*device, kBadPtx);
  ASSERT_TRUE(module.failed());
  const std::string &message = module.getMessage();
  std::printf("[ message  ] %s\n", message.c_str());
  EXPECT_EQ(message.rfind("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX "
                          "(a PTX JIT compilation failed)",
                          0),
            0u)
      << message;
  size_t log = message.find("\nJIT error log:\n");
  ASSERT_NE(log, std::string::npos) << message;
  EXPECT_TRUE(contains(message.substr(log), "error")) << message;

  Expected<Module> empty = Module::load(*device, "");
  ASSERT_TRUE(empty.failed());
  EXPECT_TRUE(contains(empty.getMessage(), "empty")) << empty.getMessage();
}

TEST_P(DriverTest, LaunchChecksAndSharedMemory) {
  Expected<Module> module = Module::load(*device, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  Expected<Function> function = Function::get(*module, "add_one");
  ASSERT_TRUE(function.ok()) << function.getMessage();
  uint64_t pointer = 0;
  int n = 0;
  void *args[] = {&pointer, &n};

  Status status = launch(*function, {1, 1, 1}, {2048, 1, 1}, 0, nullptr, args);
  ASSERT_TRUE(status.failed());
  EXPECT_TRUE(contains(status.getMessage(), "2048 threads per block"))
      << status.getMessage();
  status = launch(*function, {0, 1, 1}, {32, 1, 1}, 0, nullptr, args);
  EXPECT_TRUE(status.failed());
  int optin = device->getMaxSharedMemoryPerBlockOptin();
  status = launch(*function, {1, 1, 1}, {32, 1, 1}, unsigned(optin) + 1,
                  nullptr, args);
  ASSERT_TRUE(status.failed());
  EXPECT_TRUE(contains(status.getMessage(), "shared memory per block"))
      << status.getMessage();

  // Above 48 KiB the kernel must opt in first; the driver refuses otherwise.
  unsigned big = 64 * 1024;
  if (optin >= int(big)) {
    status = launch(*function, {1, 1, 1}, {32, 1, 1}, big, nullptr, args);
    ASSERT_TRUE(status.failed());
    EXPECT_TRUE(contains(status.getMessage(), "cuLaunchKernel failed"))
        << status.getMessage();
    EXPECT_TRUE(contains(status.getMessage(), "setMaxDynamicSharedMemory"))
        << status.getMessage();
    ASSERT_TRUE(function->setMaxDynamicSharedMemory(optin).ok());
    EXPECT_EQ(function->getMaxDynamicSharedMemory(), optin);
    status = launch(*function, {1, 1, 1}, {32, 1, 1}, big, nullptr, args);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    ASSERT_TRUE(device->synchronize().ok());
  }
  status = function->setMaxDynamicSharedMemory(optin + 1);
  ASSERT_TRUE(status.failed());
  EXPECT_TRUE(contains(status.getMessage(), "allows at most"))
      << status.getMessage();
}

TEST_P(DriverTest, OtherThreadsUseTheContext) {
  Expected<Module> module = Module::load(*device, kAddOnePtx);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  Expected<Function> function = Function::get(*module, "add_one");
  ASSERT_TRUE(function.ok()) << function.getMessage();
  // A new thread has no current context; the runtime makes the device's
  // current before each call.
  std::thread worker([&] { runAddOne(*function, 777); });
  worker.join();
}

TEST_P(DriverTest, KernelFromTheCache) {
  std::string key = makeKey(kAddOnePtx, device->getChip(), "runtime-test");
  CachedKernel kernel;
  KernelAbi abi;
  abi.name = "add_one";
  abi.grid.x = GridAxis::tilesNq(256);
  abi.threads = 256;
  abi.params = {KernelParam::pointer(AbiTensor::Q),
                KernelParam::ofSize(AbiSize::Nq)};
  kernel.kernels.push_back(abi);
  kernel.chip = device->getChip();
  kernel.image = kAddOnePtx;
  KernelCache cache("");
  ASSERT_TRUE(cache.store(key, kernel).ok());
  std::shared_ptr<const CachedKernel> hit = cache.lookup(key);
  ASSERT_NE(hit, nullptr);
  Expected<Module> module = Module::load(*device, hit->image);
  ASSERT_TRUE(module.ok()) << module.getMessage();
  Expected<Function> function = Function::get(*module, hit->kernels[0].name);
  ASSERT_TRUE(function.ok()) << function.getMessage();
  runAddOne(*function, 4096);

  // Launched the way FA's kernels are: the parameters its ABI names, from a
  // KernelCall, and the grid of its rule.
  const int n = 1000;
  std::vector<float> host(n, 1.5f);
  Expected<DeviceBuffer> buffer =
      DeviceBuffer::allocate(*device, host.size() * sizeof(float));
  ASSERT_TRUE(buffer.ok()) << buffer.getMessage();
  ASSERT_TRUE(buffer->copyFromHost(host.data(), n * sizeof(float)).ok());
  KernelCall call;
  call[AbiTensor::Q].data = buffer->getPointer();
  call.seqQ = n;
  Expected<GridSize> grid = getLaunchGrid(hit->kernels[0].grid, call);
  ASSERT_TRUE(grid.ok()) << grid.getMessage();
  EXPECT_EQ(grid->x, 4u);
  EXPECT_EQ(grid->y * grid->z, 1u);
  Expected<ParamBuffer> params = ParamBuffer::build(hit->kernels[0], call);
  ASSERT_TRUE(params.ok()) << params.getMessage();
  Status status =
      launch(*function, {grid->x, grid->y, grid->z},
             {hit->kernels[0].threads, 1, 1}, 0, nullptr, params->getArgs());
  ASSERT_TRUE(status.ok()) << status.getMessage();
  ASSERT_TRUE(buffer->copyToHost(host.data(), n * sizeof(float)).ok());
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(host[size_t(i)], 2.5f) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Drivers, DriverTest, ::testing::Values("cuda", "fake"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

} // namespace
