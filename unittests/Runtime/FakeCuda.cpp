//===- FakeCuda.cpp - A stand-in libcuda for the runtime's tests ----------===//
//
// A shared library that exports the driver entry points FA's runtime resolves
// (by the same versioned names as libcuda.so.1) and emulates one or more
// devices in host memory, so that the runtime's loading, error reporting,
// context handling and RAII are tested on machines without a GPU.
//
// - Device memory is host memory (a CUdeviceptr is a host address).
// - cuModuleLoadDataEx accepts text with ".entry <name>(" lines; text holding
//   "syntax error" fails with CUDA_ERROR_INVALID_PTX and a ptxas-like log.
//   cuLink* compiles one PTX input into a "cubin": the ELF magic and the
//   PTX text, which cuModuleLoadDataEx then loads the same way (and counts
//   as "cuModuleLoadDataEx(cubin)" too).
// - cuLaunchKernel runs one kernel natively: add_one(float *data, int n)
//   adds 1 to data[i] for each thread i < n. Others do nothing. Grids past
//   CUDA's limits (x 2^31 - 1, y and z 65535) fail with
//   CUDA_ERROR_INVALID_VALUE, as the real driver's do.
// - Every launch is recorded (FakeCudaLaunches.h): the kernel, the current
//   context's device, grid, block, shared memory and the bytes of each
//   parameter, sized by the .param list of the kernel's .entry in the PTX.
//   A kernel launched while another device's context is current than the one
//   its module was loaded in fails with CUDA_ERROR_INVALID_HANDLE.
// - The calls of every entry point are counted (FakeCudaLaunches.h).
// - cuTensorMapEncodeTiled keeps its arguments (FakeCudaLaunches.h) and
//   writes into the 128-byte map the words 0xFA7E9A9000000000 + rank, the
//   global address, the 5 dims, the 4 byte strides and the 5 box dims
//   (zero past the rank). Like the driver, it fails with
//   CUDA_ERROR_INVALID_VALUE for a rank outside 1 to 5, a map that is not
//   64-byte aligned, an address that is not 16-byte aligned, a stride that
//   is not a multiple of 16 or is 2^40 or more, or a box dim outside 1 to
//   256.
// - cuMemAllocAsync / cuMemFreeAsync allocate and free at once, as
//   cuMemAlloc / cuMemFree do (there is nothing to order);
//   cuMemsetD32Async fills at once, where the words are the fake's own
//   memory (else it only counts the call).
// - Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT when the
//   calling thread has none current.
// - Environment, read by cuInit and cuDeviceGetCount: FA_FAKE_CUDA_DEVICES
//   (default 1), FA_FAKE_CUDA_INIT_RESULT (cuInit's result, default 0),
//   FA_FAKE_CUDA_CC (compute capability as major*10+minor, default 90).
//
//===----------------------------------------------------------------------===//

#include "FakeCudaLaunches.h"
#include "fa/Runtime/CudaApi.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

using namespace fa::runtime;

struct CUctx_st {
  int ordinal;
};
struct CUfunc_st {
  std::string name;
  /// The device whose context loaded the module.
  int context = 0;
  int maxDynamicShared = 0;
  /// Bytes of each parameter, from the PTX.
  std::vector<unsigned> paramSizes;
};
struct CUmod_st {
  std::map<std::string, CUfunc_st> functions;
};
struct CUevent_st {
  bool recorded = false;
  std::chrono::steady_clock::time_point time;
};

namespace {
constexpr int kMaxDevices = 8;
constexpr int kSharedPerBlock = 48 * 1024;
constexpr int kSharedPerBlockOptin = 227 * 1024;
constexpr cu::Result kInvalidDevice = 101;
constexpr cu::Result kInvalidContext = 201;

CUctx_st contexts[kMaxDevices] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
thread_local CUctx_st *current = nullptr;

std::mutex allocationsMutex;
std::map<uint64_t, size_t> allocations; // Base address -> size.

std::mutex launchesMutex;
std::vector<FaFakeLaunch> launches;

std::mutex callsMutex;
std::map<std::string, int> calls; // Entry point -> calls since the clear.
bool tensorMapCalled = false;     // Under callsMutex, as the next.
FaFakeTensorMapCall lastTensorMap;

void countCall(const char *name) {
  std::lock_guard<std::mutex> lock(callsMutex);
  ++calls[name];
}

/// The bytes of each `.param` of the .entry whose list starts at `text`
/// (after its '('): .u64, .b64, .s64, .f64 are 8, 32-bit types 4, and so on.
std::vector<unsigned> parseParamSizes(const std::string &text, size_t at) {
  std::vector<unsigned> sizes;
  size_t end = text.find(')', at);
  for (size_t p = text.find(".param", at); p < end;
       p = text.find(".param", p + 1)) {
    size_t type = text.find('.', p + 6);
    std::string name = text.substr(type + 1, 3);
    unsigned bytes = 0;
    if (name == "u64" || name == "b64" || name == "s64" || name == "f64")
      bytes = 8;
    else if (name == "u32" || name == "b32" || name == "s32" || name == "f32")
      bytes = 4;
    else if (name == "u16" || name == "b16" || name == "s16" || name == "f16")
      bytes = 2;
    else if (name.rfind("u8", 0) == 0 || name.rfind("b8", 0) == 0 ||
             name.rfind("s8", 0) == 0)
      bytes = 1;
    sizes.push_back(bytes);
  }
  return sizes;
}

int envInt(const char *name, int fallback) {
  const char *value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

int deviceCount() {
  int count = envInt("FA_FAKE_CUDA_DEVICES", 1);
  return count < 0 ? 0 : (count > kMaxDevices ? kMaxDevices : count);
}

/// The allocation holding [pointer, pointer + bytes), or none.
bool inAllocation(uint64_t pointer, size_t bytes) {
  std::lock_guard<std::mutex> lock(allocationsMutex);
  auto it = allocations.upper_bound(pointer);
  if (it == allocations.begin())
    return false;
  --it;
  return pointer - it->first <= it->second &&
         bytes <= it->second - (pointer - it->first);
}

cu::Result allocate(cu::DevicePtr *pointer, size_t bytes) {
  if (!current)
    return kInvalidContext;
  if (bytes == 0)
    return cu::CUDA_ERROR_INVALID_VALUE;
  if (bytes > (size_t(1) << 40))
    return cu::CUDA_ERROR_OUT_OF_MEMORY;
  void *memory = std::malloc(bytes);
  if (!memory)
    return cu::CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(allocationsMutex);
  *pointer = reinterpret_cast<uintptr_t>(memory);
  allocations[*pointer] = bytes;
  return 0;
}

cu::Result release(cu::DevicePtr pointer) {
  if (!current)
    return kInvalidContext;
  std::lock_guard<std::mutex> lock(allocationsMutex);
  auto it = allocations.find(pointer);
  if (it == allocations.end())
    return cu::CUDA_ERROR_INVALID_VALUE;
  std::free(reinterpret_cast<void *>(pointer));
  allocations.erase(it);
  return 0;
}

struct ErrorText {
  cu::Result code;
  const char *name;
  const char *string;
};
constexpr ErrorText kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
};

void writeOption(unsigned count, cu::JitOption *options, void **values,
                 cu::JitOption buffer, cu::JitOption size,
                 const std::string &text) {
  char *out = nullptr;
  size_t capacity = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == buffer)
      out = static_cast<char *>(values[i]);
    if (options[i] == size)
      capacity = reinterpret_cast<uintptr_t>(values[i]);
  }
  if (!out || capacity == 0)
    return;
  size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

/// What the stand-in's "cubins" start with (an ELF file's magic).
const std::string kCubinMagic = "\x7f"
                                "ELF";

/// PTX holding "syntax error": a ptxas-like log into the options' error
/// buffer, and the driver's result.
cu::Result failSyntaxError(unsigned numOptions, cu::JitOption *options,
                           void **values) {
  writeOption(numOptions, options, values, cu::CU_JIT_ERROR_LOG_BUFFER,
              cu::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
              "ptxas application ptx input, line 1; error   : fake syntax "
              "error\nptxas fatal   : Ptx assembly aborted due to errors\n");
  return cu::CUDA_ERROR_INVALID_PTX;
}
} // namespace

extern "C" {

/// For the tests: the number of live allocations.
__attribute__((visibility("default"))) int faFakeCudaLiveAllocations() {
  std::lock_guard<std::mutex> lock(allocationsMutex);
  return int(allocations.size());
}

__attribute__((visibility("default"))) int faFakeCudaLaunchCount() {
  std::lock_guard<std::mutex> lock(launchesMutex);
  return int(launches.size());
}

__attribute__((visibility("default"))) int
faFakeCudaGetLaunch(int i, FaFakeLaunch *launch) {
  std::lock_guard<std::mutex> lock(launchesMutex);
  if (i < 0 || size_t(i) >= launches.size())
    return 0;
  *launch = launches[size_t(i)];
  return 1;
}

__attribute__((visibility("default"))) void faFakeCudaClearLaunches() {
  std::lock_guard<std::mutex> lock(launchesMutex);
  launches.clear();
}

__attribute__((visibility("default"))) int
faFakeCudaCallCount(const char *name) {
  std::lock_guard<std::mutex> lock(callsMutex);
  auto it = calls.find(name);
  return it == calls.end() ? 0 : it->second;
}

__attribute__((visibility("default"))) void faFakeCudaClearCalls() {
  std::lock_guard<std::mutex> lock(callsMutex);
  calls.clear();
  tensorMapCalled = false;
}

__attribute__((visibility("default"))) int
faFakeCudaGetTensorMapCall(FaFakeTensorMapCall *call) {
  std::lock_guard<std::mutex> lock(callsMutex);
  if (!tensorMapCalled)
    return 0;
  *call = lastTensorMap;
  return 1;
}

#define FA_FAKE_API __attribute__((visibility("default"))) cu::Result

FA_FAKE_API cuInit(unsigned) {
  countCall("cuInit");
  return envInt("FA_FAKE_CUDA_INIT_RESULT", 0);
}

FA_FAKE_API cuDriverGetVersion(int *version) {
  countCall("cuDriverGetVersion");
  *version = 13000;
  return 0;
}

FA_FAKE_API cuDeviceGetCount(int *count) {
  countCall("cuDeviceGetCount");
  *count = deviceCount();
  return 0;
}

FA_FAKE_API cuDeviceGet(cu::Device *device, int ordinal) {
  countCall("cuDeviceGet");
  if (ordinal < 0 || ordinal >= deviceCount())
    return kInvalidDevice;
  *device = ordinal;
  return 0;
}

FA_FAKE_API cuDeviceGetAttribute(int *value, cu::DeviceAttribute attribute,
                                 cu::Device device) {
  countCall("cuDeviceGetAttribute");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  int cc = envInt("FA_FAKE_CUDA_CC", 90);
  switch (attribute) {
  case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = cc / 10;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = cc % 10;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = kSharedPerBlock;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = kSharedPerBlockOptin;
    return 0;
  case cu::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *value = 50 * 1024 * 1024;
    return 0;
  default:
    return cu::CUDA_ERROR_INVALID_VALUE;
  }
}

FA_FAKE_API cuDeviceGetName(char *name, int length, cu::Device device) {
  countCall("cuDeviceGetName");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  std::snprintf(name, size_t(length), "FA Fake GPU %d", device);
  return 0;
}

FA_FAKE_API cuDeviceTotalMem_v2(size_t *bytes, cu::Device device) {
  countCall("cuDeviceTotalMem_v2");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  *bytes = size_t(80) << 30;
  return 0;
}

FA_FAKE_API cuDevicePrimaryCtxRetain(cu::Context *context, cu::Device device) {
  countCall("cuDevicePrimaryCtxRetain");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  *context = &contexts[device];
  return 0;
}

FA_FAKE_API cuCtxSetCurrent(cu::Context context) {
  countCall("cuCtxSetCurrent");
  current = context;
  return 0;
}

FA_FAKE_API cuCtxGetCurrent(cu::Context *context) {
  countCall("cuCtxGetCurrent");
  *context = current;
  return 0;
}

FA_FAKE_API cuCtxSynchronize() {
  countCall("cuCtxSynchronize");
  return current ? 0 : kInvalidContext;
}

FA_FAKE_API cuModuleLoadDataEx(cu::Module *module, const void *image,
                               unsigned numOptions, cu::JitOption *options,
                               void **values) {
  countCall("cuModuleLoadDataEx");
  if (!current)
    return kInvalidContext;
  std::string text(static_cast<const char *>(image));
  if (text.rfind(kCubinMagic, 0) == 0)
    countCall("cuModuleLoadDataEx(cubin)");
  if (text.find("syntax error") != std::string::npos)
    return failSyntaxError(numOptions, options, values);
  auto *loaded = new CUmod_st;
  for (size_t at = text.find(".entry "); at != std::string::npos;
       at = text.find(".entry ", at + 1)) {
    size_t begin = at + 7, end = text.find_first_of("( \n", begin);
    std::string name = text.substr(begin, end - begin);
    loaded->functions[name].name = name;
    loaded->functions[name].context = current->ordinal;
    if (end != std::string::npos && text[end] == '(')
      loaded->functions[name].paramSizes = parseParamSizes(text, end + 1);
  }
  writeOption(numOptions, options, values, cu::CU_JIT_INFO_LOG_BUFFER,
              cu::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
              "ptxas info    : fake: " +
                  std::to_string(loaded->functions.size()) + " entries\n");
  *module = loaded;
  return 0;
}

/// A link of one PTX input: its "cubin" is the ELF magic and the PTX text
/// (which cuModuleLoadDataEx reads as it reads PTX).
struct CUlinkState_st {
  std::vector<cu::JitOption> options;
  std::vector<void *> values;
  std::string cubin;
};

FA_FAKE_API cuLinkCreate_v2(unsigned numOptions, cu::JitOption *options,
                            void **values, cu::LinkState *state) {
  countCall("cuLinkCreate_v2");
  if (!current)
    return kInvalidContext;
  *state = new CUlinkState_st{
      {options, options + numOptions}, {values, values + numOptions}, {}};
  return 0;
}

FA_FAKE_API cuLinkAddData_v2(cu::LinkState state, cu::JitInputType type,
                             void *data, size_t size, const char *, unsigned,
                             cu::JitOption *, void **) {
  countCall("cuLinkAddData_v2");
  if (type != cu::CU_JIT_INPUT_PTX || !data || !size)
    return cu::CUDA_ERROR_INVALID_VALUE;
  std::string text(static_cast<const char *>(data));
  if (text.find("syntax error") != std::string::npos)
    return failSyntaxError(unsigned(state->options.size()),
                           state->options.data(), state->values.data());
  state->cubin = kCubinMagic + text;
  return 0;
}

FA_FAKE_API cuLinkComplete(cu::LinkState state, void **cubin, size_t *size) {
  countCall("cuLinkComplete");
  if (state->cubin.empty())
    return cu::CUDA_ERROR_INVALID_VALUE;
  *cubin = state->cubin.data();
  *size = state->cubin.size();
  return 0;
}

FA_FAKE_API cuLinkDestroy(cu::LinkState state) {
  countCall("cuLinkDestroy");
  delete state;
  return 0;
}

FA_FAKE_API cuModuleGetFunction(cu::Function *function, cu::Module module,
                                const char *name) {
  countCall("cuModuleGetFunction");
  auto it = module->functions.find(name);
  if (it == module->functions.end())
    return cu::CUDA_ERROR_NOT_FOUND;
  *function = &it->second;
  return 0;
}

FA_FAKE_API cuModuleUnload(cu::Module module) {
  countCall("cuModuleUnload");
  delete module;
  return 0;
}

FA_FAKE_API cuFuncSetAttribute(cu::Function function,
                               cu::FunctionAttribute attribute, int value) {
  countCall("cuFuncSetAttribute");
  if (attribute != cu::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value < 0 || value > kSharedPerBlockOptin)
    return cu::CUDA_ERROR_INVALID_VALUE;
  function->maxDynamicShared = value;
  return 0;
}

FA_FAKE_API cuLaunchKernel(cu::Function function, unsigned gridX,
                           unsigned gridY, unsigned gridZ, unsigned blockX,
                           unsigned blockY, unsigned blockZ,
                           unsigned sharedBytes, cu::Stream, void **params,
                           void **) {
  countCall("cuLaunchKernel");
  if (!current)
    return kInvalidContext;
  if (function->context != current->ordinal)
    return cu::CUDA_ERROR_INVALID_HANDLE;
  if (int(sharedBytes) > kSharedPerBlock &&
      int(sharedBytes) > function->maxDynamicShared)
    return cu::CUDA_ERROR_INVALID_VALUE;
  if (gridX == 0 || gridY == 0 || gridZ == 0 || gridX > 0x7fffffffu ||
      gridY > 65535 || gridZ > 65535)
    return cu::CUDA_ERROR_INVALID_VALUE;
  {
    FaFakeLaunch launch{};
    std::snprintf(launch.name, sizeof(launch.name), "%s",
                  function->name.c_str());
    unsigned dims[6] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
    for (int i = 0; i < 3; ++i) {
      launch.grid[i] = dims[i];
      launch.block[i] = dims[3 + i];
    }
    launch.context = current->ordinal;
    launch.sharedBytes = sharedBytes;
    size_t n = function->paramSizes.size();
    launch.numParams = int(n < kFaFakeMaxParams ? n : kFaFakeMaxParams);
    for (int i = 0; i < launch.numParams; ++i) {
      launch.paramSizes[i] = function->paramSizes[size_t(i)];
      // A tensor map's 128 bytes are the encoder's (recorded on its own).
      std::memcpy(&launch.params[i], params[i],
                  std::min<size_t>(launch.paramSizes[i], sizeof(uint64_t)));
    }
    std::lock_guard<std::mutex> lock(launchesMutex);
    launches.push_back(launch);
  }
  if (function->name != "add_one")
    return 0;
  uint64_t pointer = *static_cast<uint64_t *>(params[0]);
  int n = *static_cast<int *>(params[1]);
  uint64_t threads = uint64_t(gridX) * gridY * gridZ * blockX * blockY * blockZ;
  if (n > 0 && !inAllocation(pointer, size_t(n) * sizeof(float)))
    return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
  float *data = reinterpret_cast<float *>(pointer);
  for (uint64_t i = 0; i < threads && i < uint64_t(n > 0 ? n : 0); ++i)
    data[i] += 1.0f;
  return 0;
}

FA_FAKE_API cuMemAlloc_v2(cu::DevicePtr *pointer, size_t bytes) {
  countCall("cuMemAlloc_v2");
  return allocate(pointer, bytes);
}

FA_FAKE_API cuMemFree_v2(cu::DevicePtr pointer) {
  countCall("cuMemFree_v2");
  return release(pointer);
}

FA_FAKE_API cuMemAllocAsync(cu::DevicePtr *pointer, size_t bytes, cu::Stream) {
  countCall("cuMemAllocAsync");
  return allocate(pointer, bytes);
}

FA_FAKE_API cuMemFreeAsync(cu::DevicePtr pointer, cu::Stream) {
  countCall("cuMemFreeAsync");
  return release(pointer);
}

FA_FAKE_API cuMemcpyHtoD_v2(cu::DevicePtr destination, const void *source,
                            size_t bytes) {
  countCall("cuMemcpyHtoD_v2");
  if (!current)
    return kInvalidContext;
  if (!inAllocation(destination, bytes))
    return cu::CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
  return 0;
}

FA_FAKE_API cuMemcpyDtoH_v2(void *destination, cu::DevicePtr source,
                            size_t bytes) {
  countCall("cuMemcpyDtoH_v2");
  if (!current)
    return kInvalidContext;
  if (!inAllocation(source, bytes))
    return cu::CUDA_ERROR_INVALID_VALUE;
  std::memcpy(destination, reinterpret_cast<void *>(source), bytes);
  return 0;
}

FA_FAKE_API cuMemsetD8_v2(cu::DevicePtr destination, unsigned char value,
                          size_t count) {
  countCall("cuMemsetD8_v2");
  if (!current)
    return kInvalidContext;
  if (!inAllocation(destination, count))
    return cu::CUDA_ERROR_INVALID_VALUE;
  std::memset(reinterpret_cast<void *>(destination), value, count);
  return 0;
}

FA_FAKE_API cuMemsetD32Async(cu::DevicePtr destination, unsigned value,
                             size_t count, cu::Stream) {
  countCall("cuMemsetD32Async");
  if (!current)
    return kInvalidContext;
  // A test's made-up address (a workspace view) is not written.
  if (!inAllocation(destination, count * 4))
    return 0;
  std::fill_n(reinterpret_cast<uint32_t *>(destination), count,
              uint32_t(value));
  return 0;
}

FA_FAKE_API cuStreamSynchronize(cu::Stream) {
  countCall("cuStreamSynchronize");
  return 0;
}

FA_FAKE_API cuEventCreate(cu::Event *event, unsigned) {
  countCall("cuEventCreate");
  if (!current)
    return kInvalidContext;
  *event = new CUevent_st;
  return 0;
}

FA_FAKE_API cuEventRecord(cu::Event event, cu::Stream) {
  countCall("cuEventRecord");
  event->recorded = true;
  event->time = std::chrono::steady_clock::now();
  return 0;
}

FA_FAKE_API cuEventSynchronize(cu::Event) {
  countCall("cuEventSynchronize");
  return 0;
}

FA_FAKE_API cuEventElapsedTime_v2(float *milliseconds, cu::Event start,
                                  cu::Event end) {
  countCall("cuEventElapsedTime_v2");
  if (!start->recorded || !end->recorded)
    return cu::CUDA_ERROR_INVALID_HANDLE;
  *milliseconds =
      std::chrono::duration<float, std::milli>(end->time - start->time).count();
  return 0;
}

FA_FAKE_API cuEventDestroy_v2(cu::Event event) {
  countCall("cuEventDestroy_v2");
  delete event;
  return 0;
}

FA_FAKE_API cuGetErrorName(cu::Result error, const char **name) {
  countCall("cuGetErrorName");
  for (const ErrorText &e : kErrors)
    if (e.code == error) {
      *name = e.name;
      return 0;
    }
  *name = nullptr;
  return cu::CUDA_ERROR_INVALID_VALUE;
}

FA_FAKE_API cuGetErrorString(cu::Result error, const char **string) {
  countCall("cuGetErrorString");
  for (const ErrorText &e : kErrors)
    if (e.code == error) {
      *string = e.string;
      return 0;
    }
  *string = nullptr;
  return cu::CUDA_ERROR_INVALID_VALUE;
}

FA_FAKE_API cuPointerGetAttribute(void *data, cu::PointerAttribute attribute,
                                  cu::DevicePtr pointer) {
  countCall("cuPointerGetAttribute");
  if (!inAllocation(pointer, 0))
    return cu::CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
  case cu::CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *static_cast<unsigned *>(data) = cu::CU_MEMORYTYPE_DEVICE;
    return 0;
  case cu::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *static_cast<int *>(data) = 0;
    return 0;
  default:
    return cu::CUDA_ERROR_INVALID_VALUE;
  }
}

FA_FAKE_API cuTensorMapEncodeTiled(
    cu::TensorMap *tensorMap, cu::TensorMapDataType dataType, uint32_t rank,
    void *globalAddress, const uint64_t *globalDim,
    const uint64_t *globalStrides, const uint32_t *boxDim,
    const uint32_t *elementStrides, cu::TensorMapInterleave interleave,
    cu::TensorMapSwizzle swizzle, cu::TensorMapL2Promotion l2Promotion,
    cu::TensorMapFloatOOBFill oobFill) {
  countCall("cuTensorMapEncodeTiled");
  FaFakeTensorMapCall call{};
  call.map = reinterpret_cast<uintptr_t>(tensorMap);
  call.dataType = dataType;
  call.rank = rank;
  call.globalAddress = reinterpret_cast<uintptr_t>(globalAddress);
  for (uint32_t i = 0; i < rank && i < 5; ++i) {
    call.globalDim[i] = globalDim[i];
    if (i > 0)
      call.globalStrides[i - 1] = globalStrides[i - 1];
    call.boxDim[i] = boxDim[i];
    call.elementStrides[i] = elementStrides[i];
  }
  call.interleave = interleave;
  call.swizzle = swizzle;
  call.l2Promotion = l2Promotion;
  call.oobFill = oobFill;
  {
    std::lock_guard<std::mutex> lock(callsMutex);
    lastTensorMap = call;
    tensorMapCalled = true;
  }
  if (rank < 1 || rank > 5 || call.map % 64 != 0 ||
      call.globalAddress % 16 != 0)
    return cu::CUDA_ERROR_INVALID_VALUE;
  for (uint32_t i = 0; i + 1 < rank; ++i)
    if (call.globalStrides[i] % 16 != 0 ||
        call.globalStrides[i] >= (uint64_t(1) << 40))
      return cu::CUDA_ERROR_INVALID_VALUE;
  for (uint32_t i = 0; i < rank; ++i)
    if (call.boxDim[i] < 1 || call.boxDim[i] > 256)
      return cu::CUDA_ERROR_INVALID_VALUE;
  uint64_t words[16] = {0xFA7E9A9000000000ull + rank, call.globalAddress};
  for (int i = 0; i < 5; ++i) {
    words[2 + i] = call.globalDim[i];
    words[11 + i] = call.boxDim[i];
  }
  for (int i = 0; i < 4; ++i)
    words[7 + i] = call.globalStrides[i];
  std::memcpy(tensorMap, words, sizeof(words));
  return 0;
}

} // extern "C"
