//===- Cuda.cpp - FA's CUDA runtime ---------------------------------------===//
//
// The driver is dlopen'ed, never linked: see include/fa/Runtime/Cuda.h.
//
//===----------------------------------------------------------------------===//

#include "fa/Runtime/Cuda.h"
#include "fa/Target/GpuTarget.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <string>
#include <utility>

using namespace fa::runtime;

#define FA_RETURN_IF_ERROR(expr)                                               \
  do {                                                                         \
    Status faStatus = (expr);                                                  \
    if (faStatus.failed())                                                     \
      return faStatus;                                                         \
  } while (false)

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

bool fa::runtime::gpuRequired() {
  if (const char *require = std::getenv("FA_REQUIRE_GPU")) {
    std::string_view value(require);
    if (value == "1")
      return true;
    if (value == "0")
      return false;
  }
  std::error_code error;
  if (std::filesystem::exists("/dev/nvidia0", error))
    return true;
  std::filesystem::directory_iterator gpus("/proc/driver/nvidia/gpus", error);
  return !error && gpus != std::filesystem::directory_iterator();
}

Driver &Driver::get() {
  // Built once (a thread-safe static) and never destroyed nor dlclose'd, so
  // objects that outlive main (device memory held by static objects) can
  // still call into the driver while the process exits.
  static Driver *driver = new Driver("libcuda.so.1");
  return *driver;
}

std::unique_ptr<Driver> Driver::load(const std::string &library) {
  return std::unique_ptr<Driver>(new Driver(library));
}

Driver::Driver(std::string libraryName) : library(std::move(libraryName)) {
  dlerror();
  handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *error = dlerror();
    reason = library + " not found: " + (error ? error : "unknown error");
    // Where containers and WSL put the driver when the loader's path lacks
    // it; the reason stays the first error.
    if (library == "libcuda.so.1")
      for (const char *path : {"/usr/local/nvidia/lib64/libcuda.so.1",
                               "/usr/lib/wsl/lib/libcuda.so.1"})
        if ((handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
          break;
    if (!handle)
      return;
    reason.clear();
  }

  // Resolve every entry point by its versioned symbol.
#define FA_RESOLVE(symbol)                                                     \
  entryPoints.symbol =                                                         \
      reinterpret_cast<cu::PFN_##symbol>(dlsym(handle, #symbol));
  FA_CUDA_DRIVER_FUNCTIONS(FA_RESOLVE)
#undef FA_RESOLVE
  // Drivers before CUDA 12.8 have only the first version.
  if (!entryPoints.cuEventElapsedTime_v2)
    entryPoints.cuEventElapsedTime_v2 =
        reinterpret_cast<cu::PFN_cuEventElapsedTime_v2>(
            dlsym(handle, "cuEventElapsedTime"));

  std::string missing;
#define FA_CHECK_RESOLVED(symbol)                                              \
  if (!entryPoints.symbol)                                                     \
    missing += std::string(missing.empty() ? "" : ", ") + #symbol;
  FA_CUDA_DRIVER_FUNCTIONS(FA_CHECK_RESOLVED)
#undef FA_CHECK_RESOLVED
  if (!missing.empty()) {
    reason = library + " lacks " + missing;
    return;
  }

  if (entryPoints.cuDriverGetVersion(&version) != cu::CUDA_SUCCESS)
    version = 0;
  cu::Result result = entryPoints.cuInit(0);
  if (result == cu::CUDA_ERROR_NO_DEVICE) {
    reason = "no CUDA device";
    return;
  }
  if (result != cu::CUDA_SUCCESS) {
    reason = check(result, "cuInit").getMessage();
    return;
  }
  result = entryPoints.cuDeviceGetCount(&deviceCount);
  if (result != cu::CUDA_SUCCESS) {
    deviceCount = 0;
    reason = check(result, "cuDeviceGetCount").getMessage();
    return;
  }
  if (deviceCount <= 0) {
    deviceCount = 0;
    reason = "no CUDA device";
  }
}

Driver::~Driver() {
  devices.clear();
  if (handle)
    dlclose(handle);
}

Status Driver::checkAvailable() const {
  if (available())
    return Status::success();
  return Status::error("CUDA is unavailable: " + reason);
}

std::string Driver::describe(cu::Result result) const {
  const char *name = nullptr;
  const char *string = nullptr;
  if (entryPoints.cuGetErrorName &&
      entryPoints.cuGetErrorName(result, &name) != cu::CUDA_SUCCESS)
    name = nullptr;
  if (entryPoints.cuGetErrorString &&
      entryPoints.cuGetErrorString(result, &string) != cu::CUDA_SUCCESS)
    string = nullptr;
  std::string text =
      name ? std::string(name) : "CUDA error " + std::to_string(result);
  if (string)
    text += std::string(" (") + string + ")";
  return text;
}

Status Driver::check(cu::Result result, const char *call) const {
  if (result == cu::CUDA_SUCCESS)
    return Status::success();
  return Status::error(std::string(call) + " failed: " + describe(result));
}

Expected<Device> Driver::getDevice(int ordinal) {
  FA_RETURN_IF_ERROR(checkAvailable());
  if (ordinal < 0 || ordinal >= deviceCount)
    return Status::error("no CUDA device " + std::to_string(ordinal) +
                         " (there " + (deviceCount == 1 ? "is " : "are ") +
                         std::to_string(deviceCount) + ")");

  std::lock_guard<std::mutex> lock(devicesMutex);
  auto it = devices.find(ordinal);
  if (it != devices.end())
    return Device(*it->second);

  const cu::Api &cu = entryPoints;
  Device device;
  device.driver = this;
  device.ordinal = ordinal;
  FA_RETURN_IF_ERROR(
      check(cu.cuDeviceGet(&device.handle, ordinal), "cuDeviceGet"));
  char name[256] = {};
  FA_RETURN_IF_ERROR(
      check(cu.cuDeviceGetName(name, sizeof(name) - 1, device.handle),
            "cuDeviceGetName"));
  device.name = name;
  struct {
    int *value;
    cu::DeviceAttribute attribute;
  } attributes[] = {
      {&device.ccMajor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&device.ccMinor, cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&device.smCount, cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&device.maxThreadsPerBlock,
       cu::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&device.maxSharedPerBlock,
       cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&device.maxSharedPerBlockOptin,
       cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&device.l2CacheBytes, cu::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
  };
  for (auto &[value, attribute] : attributes)
    FA_RETURN_IF_ERROR(
        check(cu.cuDeviceGetAttribute(value, attribute, device.handle),
              "cuDeviceGetAttribute"));
  FA_RETURN_IF_ERROR(
      check(cu.cuDeviceTotalMem_v2(&device.totalMemoryBytes, device.handle),
            "cuDeviceTotalMem_v2"));
  FA_RETURN_IF_ERROR(
      check(cu.cuDevicePrimaryCtxRetain(&device.context, device.handle),
            "cuDevicePrimaryCtxRetain"));
  devices.emplace(ordinal, std::make_shared<const Device>(device));
  return device;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

Expected<Device> Device::get(int ordinal) {
  return Driver::get().getDevice(ordinal);
}

std::string Device::getArch() const {
  return "sm_" + std::to_string(ccMajor) + std::to_string(ccMinor);
}

std::string Device::getChip() const {
  std::string_view chip = fa::target::chipForDevice(ccMajor, ccMinor);
  return chip.empty() ? getArch() : std::string(chip);
}

Status Device::makeCurrent() const {
  if (!driver)
    return Status::error("no device (a default-constructed object)");
  const cu::Api &cu = driver->api();
  cu::Context current = nullptr;
  FA_RETURN_IF_ERROR(
      driver->check(cu.cuCtxGetCurrent(&current), "cuCtxGetCurrent"));
  if (current == context)
    return Status::success();
  return driver->check(cu.cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Status Device::synchronize() const {
  FA_RETURN_IF_ERROR(makeCurrent());
  return driver->check(driver->api().cuCtxSynchronize(), "cuCtxSynchronize");
}

//===----------------------------------------------------------------------===//
// Module and Function
//===----------------------------------------------------------------------===//

namespace {
/// Bytes of the JIT's error and info log buffers.
constexpr size_t kJitLogBytes = 64 * 1024;

bool isElf(std::string_view image) {
  return image.size() >= 4 && image.substr(0, 4) == std::string_view("\x7f"
                                                                     "ELF",
                                                                     4);
}

std::string describeDevice(const Device &device) {
  return "device " + std::to_string(device.getOrdinal()) + " (" +
         device.getName() + ", " + device.getArch() + ")";
}

std::string trimLog(const std::string &buffer) {
  std::string log(buffer.c_str()); // Up to the NUL the driver wrote.
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  return log;
}
} // namespace

Expected<Module> Module::load(const Device &device, std::string_view image) {
  if (image.empty())
    return Status::error("cannot load an empty module image");
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();

  // PTX must end with a NUL; a copy gives one (and costs little next to the
  // JIT compilation).
  std::string data(image);
  std::string errorLog(kJitLogBytes, '\0');
  std::string infoLog(kJitLogBytes, '\0');
  cu::JitOption options[] = {
      cu::CU_JIT_ERROR_LOG_BUFFER, cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      cu::CU_JIT_INFO_LOG_BUFFER,  cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      cu::CU_JIT_LOG_VERBOSE,
  };
  void *values[] = {
      errorLog.data(),
      reinterpret_cast<void *>(static_cast<uintptr_t>(errorLog.size() - 1)),
      infoLog.data(),
      reinterpret_cast<void *>(static_cast<uintptr_t>(infoLog.size() - 1)),
      reinterpret_cast<void *>(static_cast<uintptr_t>(1)),
  };
  static_assert(sizeof(options) / sizeof(options[0]) ==
                sizeof(values) / sizeof(values[0]));

  Module module(device);
  cu::Result result = driver.api().cuModuleLoadDataEx(
      &module.handle, data.c_str(), sizeof(options) / sizeof(options[0]),
      options, values);
  if (result != cu::CUDA_SUCCESS) {
    module.handle = nullptr;
    std::string message =
        driver.check(result, "cuModuleLoadDataEx").getMessage() + " loading " +
        std::to_string(image.size()) + " bytes of " +
        (isElf(image) ? "cubin" : "PTX") + " on " + describeDevice(device);
    std::string log = trimLog(errorLog);
    message += "\nJIT error log:" + (log.empty() ? " (empty)" : "\n" + log);
    return Status::error(message);
  }
  module.jitInfoLog = trimLog(infoLog);
  return module;
}

Module::Module(Module &&other) noexcept
    : device(other.device), handle(std::exchange(other.handle, nullptr)),
      jitInfoLog(std::move(other.jitInfoLog)) {}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    (void)unload();
    device = other.device;
    handle = std::exchange(other.handle, nullptr);
    jitInfoLog = std::move(other.jitInfoLog);
  }
  return *this;
}

Module::~Module() { (void)unload(); }

Status Module::unload() {
  if (!handle)
    return Status::success();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuModuleUnload(std::exchange(handle, nullptr)),
      "cuModuleUnload");
}

Expected<Function> Function::get(const Module &module,
                                 const std::string &name) {
  if (!module.getHandle())
    return Status::error("cannot get kernel '" + name +
                         "' from an unloaded module");
  const Device &device = module.getDevice();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  cu::Function handle = nullptr;
  Status status = driver.check(driver.api().cuModuleGetFunction(
                                   &handle, module.getHandle(), name.c_str()),
                               "cuModuleGetFunction");
  if (status.failed())
    return status.withContext("kernel '" + name + "'");
  return Function(device, handle, name);
}

Status Function::setMaxDynamicSharedMemory(int bytes) {
  if (bytes < 0)
    return Status::error("kernel '" + name +
                         "': negative dynamic shared memory size " +
                         std::to_string(bytes));
  if (bytes > device.getMaxSharedMemoryPerBlockOptin())
    return Status::error(
        "kernel '" + name + "' asks for " + std::to_string(bytes) +
        " bytes of dynamic shared memory; " + describeDevice(device) +
        " allows at most " +
        std::to_string(device.getMaxSharedMemoryPerBlockOptin()) +
        " per block");
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  Status status = driver.check(
      driver.api().cuFuncSetAttribute(
          handle, cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  if (status.failed())
    return status.withContext("kernel '" + name + "'");
  maxDynamicShared = bytes;
  return Status::success();
}

namespace {
std::string formatDim3(Dim3 d) {
  return std::to_string(d.x) + "x" + std::to_string(d.y) + "x" +
         std::to_string(d.z);
}
} // namespace

Status fa::runtime::launch(const Function &function, Dim3 grid, Dim3 block,
                           unsigned sharedBytes, void *stream, void **args) {
  const Device &device = function.getDevice();
  // Formatted for errors only: this runs for every launch.
  auto what = [&] {
    return "launch of kernel '" + function.getName() + "' (grid " +
           formatDim3(grid) + ", block " + formatDim3(block) + ", " +
           std::to_string(sharedBytes) + " bytes of dynamic shared memory)";
  };
  if (!function.getHandle())
    return Status::error(what() + ": no kernel");
  if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
    return Status::error(what() + ": empty grid or block");
  // CUDA's limits (every GPU since compute capability 3.0).
  if (grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535)
    return Status::error(what() + ": CUDA allows grids of at most 2^31 - 1 x " +
                         "65535 x 65535 blocks");
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads > uint64_t(device.getMaxThreadsPerBlock()))
    return Status::error(what() + ": " + std::to_string(threads) +
                         " threads per block; " + describeDevice(device) +
                         " allows at most " +
                         std::to_string(device.getMaxThreadsPerBlock()));
  if (sharedBytes > unsigned(device.getMaxSharedMemoryPerBlockOptin()))
    return Status::error(
        what() + ": " + describeDevice(device) + " allows at most " +
        std::to_string(device.getMaxSharedMemoryPerBlockOptin()) +
        " bytes of shared memory per block");
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  cu::Result result = driver.api().cuLaunchKernel(
      function.getHandle(), grid.x, grid.y, grid.z, block.x, block.y, block.z,
      sharedBytes, static_cast<cu::Stream>(stream), args, nullptr);
  if (result == cu::CUDA_SUCCESS)
    return Status::success();
  std::string message =
      driver.check(result, "cuLaunchKernel").getMessage() + " in " + what();
  if (sharedBytes > unsigned(device.getMaxSharedMemoryPerBlock()) &&
      int(sharedBytes) > function.getMaxDynamicSharedMemory())
    message += "; above " +
               std::to_string(device.getMaxSharedMemoryPerBlock()) +
               " bytes, call Function::setMaxDynamicSharedMemory first";
  return Status::error(message);
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

Expected<DeviceBuffer> DeviceBuffer::allocate(const Device &device,
                                              size_t bytes) {
  DeviceBuffer buffer;
  buffer.device = device;
  if (bytes == 0)
    return buffer;
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  cu::DevicePtr pointer = 0;
  Status status = driver.check(driver.api().cuMemAlloc_v2(&pointer, bytes),
                               "cuMemAlloc_v2");
  if (status.failed())
    return Status::error(status.getMessage() + " allocating " +
                         std::to_string(bytes) + " bytes on " +
                         describeDevice(device));
  buffer.pointer = pointer;
  buffer.size = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : device(other.device), pointer(std::exchange(other.pointer, 0)),
      size(std::exchange(other.size, 0)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    (void)release();
    device = other.device;
    pointer = std::exchange(other.pointer, 0);
    size = std::exchange(other.size, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { (void)release(); }

Status DeviceBuffer::release() {
  if (!pointer)
    return Status::success();
  size = 0;
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(driver.api().cuMemFree_v2(std::exchange(pointer, 0)),
                      "cuMemFree_v2");
}

Status DeviceBuffer::checkRange(const char *what, size_t bytes,
                                size_t offset) const {
  if (offset > size || bytes > size - offset)
    return Status::error(std::string(what) + " of " + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(offset) +
                         " overruns a device buffer of " +
                         std::to_string(size) + " bytes");
  return Status::success();
}

Status DeviceBuffer::copyFromHost(const void *source, size_t bytes,
                                  size_t offset) {
  FA_RETURN_IF_ERROR(checkRange("copy to the device", bytes, offset));
  if (bytes == 0)
    return Status::success();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuMemcpyHtoD_v2(pointer + offset, source, bytes),
      "cuMemcpyHtoD_v2");
}

Status DeviceBuffer::copyToHost(void *destination, size_t bytes,
                                size_t offset) const {
  FA_RETURN_IF_ERROR(checkRange("copy to the host", bytes, offset));
  if (bytes == 0)
    return Status::success();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuMemcpyDtoH_v2(destination, pointer + offset, bytes),
      "cuMemcpyDtoH_v2");
}

Status DeviceBuffer::fill(unsigned char value) {
  if (size == 0)
    return Status::success();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(driver.api().cuMemsetD8_v2(pointer, value, size),
                      "cuMemsetD8_v2");
}

Status fa::runtime::fillWordsAsync(const Device &device, uint64_t pointer,
                                   uint32_t value, size_t count, void *stream) {
  if (count == 0)
    return Status::success();
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuMemsetD32Async(pointer, value, count,
                                    static_cast<cu::Stream>(stream)),
      "cuMemsetD32Async");
}

//===----------------------------------------------------------------------===//
// StreamBuffer and ScopedContext
//===----------------------------------------------------------------------===//

Expected<StreamBuffer> StreamBuffer::allocate(const Device &device,
                                              size_t bytes, void *stream) {
  if (bytes == 0)
    return Status::error("cannot allocate 0 bytes on a stream");
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  cu::DevicePtr pointer = 0;
  Status status =
      driver.check(driver.api().cuMemAllocAsync(
                       &pointer, bytes, static_cast<cu::Stream>(stream)),
                   "cuMemAllocAsync");
  if (status.failed())
    return Status::error(status.getMessage() + " allocating " +
                         std::to_string(bytes) + " bytes on " +
                         describeDevice(device));
  StreamBuffer buffer;
  buffer.device = device;
  buffer.pointer = pointer;
  buffer.size = bytes;
  buffer.stream = stream;
  return buffer;
}

StreamBuffer::StreamBuffer(StreamBuffer &&other) noexcept
    : device(other.device), pointer(std::exchange(other.pointer, 0)),
      size(std::exchange(other.size, 0)), stream(other.stream) {}

StreamBuffer &StreamBuffer::operator=(StreamBuffer &&other) noexcept {
  if (this != &other) {
    (void)release();
    device = other.device;
    pointer = std::exchange(other.pointer, 0);
    size = std::exchange(other.size, 0);
    stream = other.stream;
  }
  return *this;
}

StreamBuffer::~StreamBuffer() { (void)release(); }

Status StreamBuffer::release() {
  if (!pointer)
    return Status::success();
  size = 0;
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuMemFreeAsync(std::exchange(pointer, 0),
                                  static_cast<cu::Stream>(stream)),
      "cuMemFreeAsync");
}

ScopedContext::ScopedContext(const Device &device)
    : driver(&device.getDriver()) {
  status = driver->check(driver->api().cuCtxGetCurrent(&previous),
                         "cuCtxGetCurrent");
  if (status.failed())
    return;
  if (previous == device.getContext())
    return;
  status = driver->check(driver->api().cuCtxSetCurrent(device.getContext()),
                         "cuCtxSetCurrent");
  restore = status.ok();
}

ScopedContext::~ScopedContext() {
  if (restore)
    (void)driver->api().cuCtxSetCurrent(previous);
}

//===----------------------------------------------------------------------===//
// Event
//===----------------------------------------------------------------------===//

Expected<Event> Event::create(const Device &device) {
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  Event event(device);
  FA_RETURN_IF_ERROR(driver.check(
      driver.api().cuEventCreate(&event.handle, cu::CU_EVENT_DEFAULT),
      "cuEventCreate"));
  return event;
}

Event::Event(Event &&other) noexcept
    : device(other.device), handle(std::exchange(other.handle, nullptr)) {}

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    if (handle && device.makeCurrent().ok())
      (void)device.getDriver().api().cuEventDestroy_v2(handle);
    device = other.device;
    handle = std::exchange(other.handle, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (handle && device.makeCurrent().ok())
    (void)device.getDriver().api().cuEventDestroy_v2(handle);
}

Status Event::record(void *stream) {
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(
      driver.api().cuEventRecord(handle, static_cast<cu::Stream>(stream)),
      "cuEventRecord");
}

Status Event::synchronize() const {
  FA_RETURN_IF_ERROR(device.makeCurrent());
  Driver &driver = device.getDriver();
  return driver.check(driver.api().cuEventSynchronize(handle),
                      "cuEventSynchronize");
}

Expected<float> Event::elapsedMs(const Event &start, const Event &end) {
  FA_RETURN_IF_ERROR(end.synchronize());
  Driver &driver = end.device.getDriver();
  float ms = 0;
  FA_RETURN_IF_ERROR(driver.check(
      driver.api().cuEventElapsedTime_v2(&ms, start.handle, end.handle),
      "cuEventElapsedTime"));
  return ms;
}

//===----------------------------------------------------------------------===//
// Pointers
//===----------------------------------------------------------------------===//

Expected<PointerInfo> fa::runtime::queryPointer(uint64_t pointer,
                                                Driver &driver) {
  FA_RETURN_IF_ERROR(driver.checkAvailable());
  const cu::Api &cu = driver.api();
  unsigned memoryType = 0;
  FA_RETURN_IF_ERROR(driver.check(
      cu.cuPointerGetAttribute(&memoryType,
                               cu::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, pointer),
      "cuPointerGetAttribute(MEMORY_TYPE)"));
  PointerInfo info;
  switch (memoryType) {
  case cu::CU_MEMORYTYPE_HOST:
    info.memoryType = PointerInfo::MemoryType::Host;
    break;
  case cu::CU_MEMORYTYPE_DEVICE:
    info.memoryType = PointerInfo::MemoryType::Device;
    break;
  case cu::CU_MEMORYTYPE_ARRAY:
    info.memoryType = PointerInfo::MemoryType::Array;
    break;
  case cu::CU_MEMORYTYPE_UNIFIED:
    info.memoryType = PointerInfo::MemoryType::Unified;
    break;
  default:
    return Status::error("cuPointerGetAttribute(MEMORY_TYPE) gave unknown "
                         "memory type " +
                         std::to_string(memoryType));
  }
  FA_RETURN_IF_ERROR(driver.check(
      cu.cuPointerGetAttribute(&info.deviceOrdinal,
                               cu::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                               pointer),
      "cuPointerGetAttribute(DEVICE_ORDINAL)"));
  return info;
}

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

Status fa::runtime::encodeTensorMap(const TensorMapRequest &request,
                                    void *map) {
  return encodeTensorMap(request, map, Driver::get());
}

Status fa::runtime::encodeTensorMap(const TensorMapRequest &request, void *map,
                                    Driver &driver) {
  FA_RETURN_IF_ERROR(driver.checkAvailable());
  // Formatted for errors only: this runs for each TMA operand of every
  // launch.
  auto what = [&request] {
    auto list = [](const auto &values) {
      std::string text;
      for (const auto &value : values)
        text += (text.empty() ? "" : ", ") + std::to_string(value);
      return "(" + text + ")";
    };
    char address[32];
    std::snprintf(address, sizeof(address), "0x%llx",
                  static_cast<unsigned long long>(request.data));
    return std::string("the tensor map of ") + address + " with dims " +
           list(request.dims) + ", byte strides " + list(request.strides) +
           ", box " + list(request.box);
  };
  if (reinterpret_cast<uintptr_t>(map) % 64 != 0)
    return Status::error("cuTensorMapEncodeTiled needs a 64-byte aligned map "
                         "for " +
                         what());
  const uint32_t elementStrides[5] = {1, 1, 1, 1, 1};
  cu::Result result = driver.api().cuTensorMapEncodeTiled(
      static_cast<cu::TensorMap *>(map),
      request.elementBytes == 4 ? cu::CU_TENSOR_MAP_DATA_TYPE_UINT32
                                : cu::CU_TENSOR_MAP_DATA_TYPE_UINT16,
      5, reinterpret_cast<void *>(static_cast<uintptr_t>(request.data)),
      request.dims, request.strides, request.box, elementStrides,
      cu::CU_TENSOR_MAP_INTERLEAVE_NONE, cu::CU_TENSOR_MAP_SWIZZLE_128B,
      cu::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      cu::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != cu::CUDA_SUCCESS)
    return Status::error(
        driver.check(result, "cuTensorMapEncodeTiled").getMessage() +
        " encoding " + what());
  return Status::success();
}
