//===- Cuda.h - FA's CUDA runtime -------------------------------*- C++ -*-===//
//
// A thin layer over the CUDA driver API that loads FA's kernels (PTX or cubin)
// and runs them. It depends on nothing but libc: libcuda.so.1 is dlopen'ed on
// first use, so programs that link it build and run where no driver exists,
// and ask Driver::get().available() (or get the reason in an error) before
// touching a GPU.
//
// Every driver call is checked. Errors name the call and carry the driver's
// error name and string, e.g.
//   cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation
//   failed)
// followed, for module loads, by the JIT compiler's error log.
//
// Contexts: each Device uses the device's primary context (the one the CUDA
// runtime and PyTorch use), retained once per process and never released.
// Calls that need a context make the device's current on the calling thread
// first, so any thread may use any object.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CUDA_H
#define FA_RUNTIME_CUDA_H

#include "fa/Runtime/CudaApi.h"
#include "fa/Runtime/KernelAbi.h"
#include "fa/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace fa::runtime {

class Device;

/// Whether GPU work must run here rather than skip or fall back to the host:
/// FA_REQUIRE_GPU=1, or, unless FA_REQUIRE_GPU=0, an NVIDIA GPU that the
/// kernel driver lists (/proc/driver/nvidia/gpus or /dev/nvidia0). Where it
/// holds, a CUDA driver that fails to load or finds no device is an error
/// (with the driver's reason) for --target=auto, "auto" in the APIs and every
/// GPU test.
bool gpuRequired();

/// The CUDA driver library and its entry points.
class Driver {
public:
  /// The process's driver: on the first call (thread-safe) dlopen's
  /// libcuda.so.1, resolves the entry points, calls cuInit(0) and counts the
  /// devices. Never fails; see available().
  static Driver &get();

  /// A driver loaded from `library` (a file name or path for dlopen), apart
  /// from the process's one. For tests with a stand-in driver.
  static std::unique_ptr<Driver> load(const std::string &library);

  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;
  ~Driver();

  /// Whether the library loaded, cuInit succeeded and there is a device.
  bool available() const { return reason.empty(); }
  /// Why not: "libcuda.so.1 not found: <dlerror>", "libcuda.so.1 lacks
  /// <symbol>", "cuInit failed: ..." or "no CUDA device". Empty when
  /// available.
  const std::string &unavailableReason() const { return reason; }
  /// Success when available, else an error with the reason.
  Status checkAvailable() const;

  /// The library's name as given to dlopen.
  const std::string &getLibrary() const { return library; }
  /// cuDriverGetVersion: 1000 * major + 10 * minor (13000 for CUDA 13.0); 0
  /// when the library did not load.
  int getVersion() const { return version; }
  /// The number of devices (0 when unavailable).
  int getDeviceCount() const { return deviceCount; }

  /// The resolved entry points (all non-null when available()).
  const cu::Api &api() const { return entryPoints; }

  /// "CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)" for `result`.
  std::string describe(cu::Result result) const;
  /// Success when `result` is CUDA_SUCCESS, else the error
  /// "<call> failed: <name> (<string>)".
  Status check(cu::Result result, const char *call) const;

  /// The device `ordinal` (queried once, then cached): its primary context is
  /// retained and its properties read.
  Expected<Device> getDevice(int ordinal);

private:
  explicit Driver(std::string library);

  std::string library;
  void *handle = nullptr;
  std::string reason;
  int version = 0;
  int deviceCount = 0;
  cu::Api entryPoints;
  std::mutex devicesMutex;
  std::map<int, std::shared_ptr<const Device>> devices;
};

/// One GPU, with its primary context. Cheap to copy.
class Device {
public:
  /// Device `ordinal` of Driver::get() (an error when the driver is
  /// unavailable or there is no such device).
  static Expected<Device> get(int ordinal = 0);

  Driver &getDriver() const { return *driver; }
  int getOrdinal() const { return ordinal; }
  cu::Device getHandle() const { return handle; }
  cu::Context getContext() const { return context; }
  /// The marketing name, e.g. "NVIDIA H100 80GB HBM3".
  const std::string &getName() const { return name; }
  int getComputeCapabilityMajor() const { return ccMajor; }
  int getComputeCapabilityMinor() const { return ccMinor; }
  /// The compute capability as an SM name: "sm_90" for 9.0.
  std::string getArch() const;
  /// The chip FA compiles for (fa::target::chipForDevice): the
  /// architecture-specific entry where the target model has one ("sm_90a" on
  /// an H100, for wgmma and setmaxnreg), else the compute capability's own
  /// or the newest whose PTX it runs; getArch() for a device FA does not
  /// know.
  std::string getChip() const;
  int getSMCount() const { return smCount; }
  int getMaxThreadsPerBlock() const { return maxThreadsPerBlock; }
  /// Shared memory a block gets without opting in (48 KiB).
  int getMaxSharedMemoryPerBlock() const { return maxSharedPerBlock; }
  /// Shared memory a block may get after opting in with
  /// Function::setMaxDynamicSharedMemory (227 KiB on sm_90).
  int getMaxSharedMemoryPerBlockOptin() const { return maxSharedPerBlockOptin; }
  int getL2CacheBytes() const { return l2CacheBytes; }
  size_t getTotalMemoryBytes() const { return totalMemoryBytes; }

  /// Makes this device's primary context current on the calling thread.
  Status makeCurrent() const;
  /// cuCtxSynchronize on this device's context.
  Status synchronize() const;

private:
  friend class Driver;
  friend class DeviceBuffer;
  friend class StreamBuffer;
  Device() = default;

  Driver *driver = nullptr;
  int ordinal = 0;
  cu::Device handle = 0;
  cu::Context context = nullptr;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int smCount = 0;
  int maxThreadsPerBlock = 0;
  int maxSharedPerBlock = 0;
  int maxSharedPerBlockOptin = 0;
  int l2CacheBytes = 0;
  size_t totalMemoryBytes = 0;
};

/// A loaded module (cuModuleLoadDataEx): PTX, which the driver compiles for
/// the device, or a cubin / fatbin. Unloaded when destroyed.
class Module {
public:
  /// Loads `image` on `device`. PTX is text (it need not be NUL-terminated
  /// here); a cubin starts with the ELF magic. On failure the error carries
  /// the JIT compiler's error log.
  static Expected<Module> load(const Device &device, std::string_view image);

  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  const Device &getDevice() const { return device; }
  cu::Module getHandle() const { return handle; }
  /// The JIT compiler's info log (verbose: registers, spills, shared memory
  /// per kernel); empty for a cubin.
  const std::string &getJitInfoLog() const { return jitInfoLog; }

  /// Unloads now (the destructor does it too, ignoring errors).
  Status unload();

private:
  explicit Module(const Device &device) : device(device) {}

  Device device;
  cu::Module handle = nullptr;
  std::string jitInfoLog;
};

/// A kernel of a loaded Module; valid while the Module is.
class Function {
public:
  /// The kernel `name` (its .entry name) of `module`.
  static Expected<Function> get(const Module &module, const std::string &name);

  const Device &getDevice() const { return device; }
  cu::Function getHandle() const { return handle; }
  const std::string &getName() const { return name; }

  /// Allows launches with up to `bytes` of dynamic shared memory
  /// (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES); needed above 48 KiB.
  Status setMaxDynamicSharedMemory(int bytes);
  /// The last value given to setMaxDynamicSharedMemory (0 if none).
  int getMaxDynamicSharedMemory() const { return maxDynamicShared; }

private:
  Function(const Device &device, cu::Function handle, std::string name)
      : device(device), handle(handle), name(std::move(name)) {}

  Device device;
  cu::Function handle = nullptr;
  std::string name;
  int maxDynamicShared = 0;
};

/// A grid or block shape.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// Launches `function` (cuLaunchKernel) on `stream` (a CUstream or
/// cudaStream_t; null for the legacy default stream) with `sharedBytes` of
/// dynamic shared memory. `args` holds one pointer per kernel parameter, to
/// the parameter's value. Asynchronous: errors of the kernel's execution show
/// at the next synchronizing call. Checks the shapes and the shared memory
/// against the device's limits first, with a message that says which.
Status launch(const Function &function, Dim3 grid, Dim3 block,
              unsigned sharedBytes, void *stream, void **args);

/// Device memory (cuMemAlloc), freed when destroyed.
class DeviceBuffer {
public:
  /// `bytes` of device memory on `device` (0 bytes gives a null buffer).
  static Expected<DeviceBuffer> allocate(const Device &device, size_t bytes);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  /// The device address (a CUdeviceptr), e.g. for a kernel argument.
  uint64_t getPointer() const { return pointer; }
  size_t getSize() const { return size; }

  /// Copies `bytes` from host memory at `source` to offset `offset`.
  Status copyFromHost(const void *source, size_t bytes, size_t offset = 0);
  /// Copies `bytes` at offset `offset` to host memory at `destination`.
  Status copyToHost(void *destination, size_t bytes, size_t offset = 0) const;
  /// Sets every byte to `value` (cuMemsetD8).
  Status fill(unsigned char value);
  /// Frees now (the destructor does it too, ignoring errors).
  Status release();

private:
  Status checkRange(const char *what, size_t bytes, size_t offset) const;

  Device device;
  uint64_t pointer = 0;
  size_t size = 0;
};

/// Device memory of the stream-ordered allocator (cuMemAllocAsync): usable by
/// work enqueued on `stream` after the allocation, and freed on the same
/// stream (cuMemFreeAsync) when destroyed, once the work enqueued before is
/// done. Neither call waits on the host, and both may be captured in a CUDA
/// graph.
class StreamBuffer {
public:
  /// `bytes` (> 0) on `device`, ordered on `stream` (a CUstream of the
  /// device; null: the legacy default stream).
  static Expected<StreamBuffer> allocate(const Device &device, size_t bytes,
                                         void *stream);

  StreamBuffer() = default;
  StreamBuffer(StreamBuffer &&other) noexcept;
  StreamBuffer &operator=(StreamBuffer &&other) noexcept;
  StreamBuffer(const StreamBuffer &) = delete;
  StreamBuffer &operator=(const StreamBuffer &) = delete;
  ~StreamBuffer();

  uint64_t getPointer() const { return pointer; }
  size_t getSize() const { return size; }
  /// Frees now, on the stream (the destructor does it too, ignoring errors).
  Status release();

private:
  Device device;
  uint64_t pointer = 0;
  size_t size = 0;
  void *stream = nullptr;
};

/// Sets `count` 32-bit words at `pointer` (device memory of `device`) to
/// `value`, ordered on `stream` (cuMemsetD32Async: no host wait; a CUDA graph
/// may capture it).
Status fillWordsAsync(const Device &device, uint64_t pointer, uint32_t value,
                      size_t count, void *stream);

/// Makes `device`'s context current on this thread for the scope, then
/// restores the context that was current before (none included), so that a
/// caller's notion of the current device (the CUDA runtime's, torch's) does
/// not change under it.
class ScopedContext {
public:
  explicit ScopedContext(const Device &device);
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  ~ScopedContext();

  /// Whether the device's context could be made current.
  const Status &getStatus() const { return status; }

private:
  Driver *driver = nullptr;
  cu::Context previous = nullptr;
  bool restore = false;
  Status status;
};

/// A CUDA event for timing work on a stream.
class Event {
public:
  static Expected<Event> create(const Device &device);

  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  cu::Event getHandle() const { return handle; }
  /// Records the event on `stream` (null: the legacy default stream).
  Status record(void *stream = nullptr);
  /// Waits until the work recorded before the event is done.
  Status synchronize() const;
  /// Milliseconds between two recorded events; waits for `end`.
  static Expected<float> elapsedMs(const Event &start, const Event &end);

private:
  explicit Event(const Device &device) : device(device) {}

  Device device;
  cu::Event handle = nullptr;
};

/// Where a pointer's memory lives (cuPointerGetAttribute).
struct PointerInfo {
  enum class MemoryType { Host, Device, Array, Unified };
  MemoryType memoryType = MemoryType::Host;
  /// The ordinal of the device the memory was allocated on.
  int deviceOrdinal = -1;
};

/// What the driver knows of `pointer`: an error ("cuPointerGetAttribute
/// failed: CUDA_ERROR_INVALID_VALUE ...") for memory CUDA did not allocate or
/// register, such as plain host memory.
Expected<PointerInfo> queryPointer(uint64_t pointer,
                                   Driver &driver = Driver::get());

/// Encodes the tensor map of `request` (KernelAbi.h: a rank-5 UINT16 map,
/// element strides 1, no interleave, 128-byte swizzle, L2 promotion 128B,
/// zero fill) into the 128 bytes at `map` (64-byte aligned at least) with
/// cuTensorMapEncodeTiled of Driver::get() (or of `driver`): what a
/// launch's TensorMapEncoder calls, with its device's driver.
/// Needs no context. An error names the driver's error and the map (its
/// address, dims, byte strides and box).
Status encodeTensorMap(const TensorMapRequest &request, void *map);
/// The same with `driver` (a test's stand-in).
Status encodeTensorMap(const TensorMapRequest &request, void *map,
                       Driver &driver);

} // namespace fa::runtime

#endif // FA_RUNTIME_CUDA_H
