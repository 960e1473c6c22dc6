//===- CudaApi.h - The CUDA driver API subset FA uses -----------*- C++ -*-===//
//
// FA's own declarations of the part of the CUDA driver API (cuda.h) that the
// runtime calls, so that the runtime builds where no CUDA toolkit is
// installed and links nothing from CUDA: libcuda.so.1 is dlopen'ed at run
// time (see Cuda.h). The names are cuda.h's, inside namespace fa::runtime::cu;
// the handle types are pointers to cuda.h's own struct tags, so they are the
// very types cuda.h declares and a program may include both headers.
//
// The values and signatures below are part of the driver's stable ABI. Where
// CMake finds cuda.h, runtime/CudaHeaderCheck.cpp static_asserts every value,
// every entry point's existence and every signature's shape against it.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_CUDAAPI_H
#define FA_RUNTIME_CUDAAPI_H

#include <cstddef>
#include <cstdint>

// cuda.h's struct tags (global namespace), so cu::Context is CUcontext.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUtensorMap_st;
struct CUlinkState_st;

namespace fa::runtime::cu {

using Result = int;                   // CUresult
using Device = int;                   // CUdevice
using DevicePtr = unsigned long long; // CUdeviceptr (64-bit hosts)
using Context = ::CUctx_st *;         // CUcontext
using Module = ::CUmod_st *;          // CUmodule
using Function = ::CUfunc_st *;       // CUfunction
using Stream = ::CUstream_st *;       // CUstream
using Event = ::CUevent_st *;         // CUevent
using DeviceAttribute = int;          // CUdevice_attribute
using FunctionAttribute = int;        // CUfunction_attribute
using JitOption = int;                // CUjit_option
using JitInputType = int;             // CUjitInputType
using LinkState = ::CUlinkState_st *; // CUlinkState
using PointerAttribute = int;         // CUpointer_attribute
using TensorMap = ::CUtensorMap_st;   // CUtensorMap (128 bytes, opaque)
using TensorMapDataType = int;        // CUtensorMapDataType
using TensorMapInterleave = int;      // CUtensorMapInterleave
using TensorMapSwizzle = int;         // CUtensorMapSwizzle
using TensorMapL2Promotion = int;     // CUtensorMapL2promotion
using TensorMapFloatOOBFill = int;    // CUtensorMapFloatOOBfill

// CUresult values the runtime names itself (the driver names the rest).
enum : Result {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
};

// CUdevice_attribute.
enum : DeviceAttribute {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute.
enum : FunctionAttribute {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

// CUjit_option.
enum : JitOption {
  CU_JIT_WALL_TIME = 2,
  CU_JIT_INFO_LOG_BUFFER = 3,
  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_LOG_VERBOSE = 12,
};

// CUjitInputType.
enum : JitInputType {
  CU_JIT_INPUT_PTX = 1,
};

// CUpointer_attribute and CUmemorytype.
enum : PointerAttribute {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
};
enum : unsigned {
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_ARRAY = 3,
  CU_MEMORYTYPE_UNIFIED = 4,
};

// CUevent_flags.
enum : unsigned {
  CU_EVENT_DEFAULT = 0,
  CU_EVENT_BLOCKING_SYNC = 1,
  CU_EVENT_DISABLE_TIMING = 2,
};

// The tensor-map (TMA) enums: the values FA encodes its maps with.
enum : TensorMapDataType {
  CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
  CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2
};
enum : TensorMapInterleave { CU_TENSOR_MAP_INTERLEAVE_NONE = 0 };
enum : TensorMapSwizzle { CU_TENSOR_MAP_SWIZZLE_128B = 3 };
enum : TensorMapL2Promotion { CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2 };
enum : TensorMapFloatOOBFill { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 };

// The entry points, as pointer types (CUDAAPI is empty on Linux).
using PFN_cuInit = Result (*)(unsigned flags);
using PFN_cuDriverGetVersion = Result (*)(int *version);
using PFN_cuDeviceGet = Result (*)(Device *device, int ordinal);
using PFN_cuDeviceGetCount = Result (*)(int *count);
using PFN_cuDeviceGetAttribute = Result (*)(int *value,
                                            DeviceAttribute attribute,
                                            Device device);
using PFN_cuDeviceGetName = Result (*)(char *name, int length, Device device);
using PFN_cuDeviceTotalMem_v2 = Result (*)(size_t *bytes, Device device);
using PFN_cuDevicePrimaryCtxRetain = Result (*)(Context *context,
                                                Device device);
using PFN_cuCtxSetCurrent = Result (*)(Context context);
using PFN_cuCtxGetCurrent = Result (*)(Context *context);
using PFN_cuCtxSynchronize = Result (*)();
using PFN_cuModuleLoadDataEx = Result (*)(Module *module, const void *image,
                                          unsigned numOptions,
                                          JitOption *options, void **values);
using PFN_cuLinkCreate_v2 = Result (*)(unsigned numOptions, JitOption *options,
                                       void **values, LinkState *state);
using PFN_cuLinkAddData_v2 = Result (*)(LinkState state, JitInputType type,
                                        void *data, size_t size,
                                        const char *name, unsigned numOptions,
                                        JitOption *options, void **values);
using PFN_cuLinkComplete = Result (*)(LinkState state, void **cubin,
                                      size_t *size);
using PFN_cuLinkDestroy = Result (*)(LinkState state);
using PFN_cuModuleGetFunction = Result (*)(Function *function, Module module,
                                           const char *name);
using PFN_cuModuleUnload = Result (*)(Module module);
using PFN_cuFuncSetAttribute = Result (*)(Function function,
                                          FunctionAttribute attribute,
                                          int value);
using PFN_cuLaunchKernel = Result (*)(Function function, unsigned gridX,
                                      unsigned gridY, unsigned gridZ,
                                      unsigned blockX, unsigned blockY,
                                      unsigned blockZ, unsigned sharedBytes,
                                      Stream stream, void **params,
                                      void **extra);
using PFN_cuMemAlloc_v2 = Result (*)(DevicePtr *pointer, size_t bytes);
using PFN_cuMemFree_v2 = Result (*)(DevicePtr pointer);
using PFN_cuMemAllocAsync = Result (*)(DevicePtr *pointer, size_t bytes,
                                       Stream stream);
using PFN_cuMemFreeAsync = Result (*)(DevicePtr pointer, Stream stream);
using PFN_cuMemcpyHtoD_v2 = Result (*)(DevicePtr destination,
                                       const void *source, size_t bytes);
using PFN_cuMemcpyDtoH_v2 = Result (*)(void *destination, DevicePtr source,
                                       size_t bytes);
using PFN_cuMemsetD8_v2 = Result (*)(DevicePtr destination, unsigned char value,
                                     size_t count);
using PFN_cuMemsetD32Async = Result (*)(DevicePtr destination, unsigned value,
                                        size_t count, Stream stream);
using PFN_cuStreamSynchronize = Result (*)(Stream stream);
using PFN_cuEventCreate = Result (*)(Event *event, unsigned flags);
using PFN_cuEventRecord = Result (*)(Event event, Stream stream);
using PFN_cuEventSynchronize = Result (*)(Event event);
using PFN_cuEventElapsedTime_v2 = Result (*)(float *milliseconds, Event start,
                                             Event end);
using PFN_cuEventDestroy_v2 = Result (*)(Event event);
using PFN_cuGetErrorName = Result (*)(Result error, const char **name);
using PFN_cuGetErrorString = Result (*)(Result error, const char **string);
using PFN_cuPointerGetAttribute = Result (*)(void *data,
                                             PointerAttribute attribute,
                                             DevicePtr pointer);
// cuuint32_t and cuuint64_t are uint32_t and uint64_t.
using PFN_cuTensorMapEncodeTiled =
    Result (*)(TensorMap *tensorMap, TensorMapDataType dataType, uint32_t rank,
               void *globalAddress, const uint64_t *globalDim,
               const uint64_t *globalStrides, const uint32_t *boxDim,
               const uint32_t *elementStrides, TensorMapInterleave interleave,
               TensorMapSwizzle swizzle, TensorMapL2Promotion l2Promotion,
               TensorMapFloatOOBFill oobFill);

/// X(symbol): every entry point the runtime resolves, by the versioned symbol
/// libcuda.so.1 exports (what cuda.h's macros map the plain name to, e.g.
/// cuMemAlloc -> cuMemAlloc_v2). `Api` holds each in a member of that name
/// (which no cuda.h macro renames, so a file may include cuda.h before or
/// after this header; only cuLaunchKernel, cuEventRecord,
/// cuStreamSynchronize, cuMemAllocAsync, cuMemFreeAsync and cuMemsetD32Async
/// are macros, and
/// only with CUDA_API_PER_THREAD_DEFAULT_STREAM). cuEventElapsedTime_v2
/// (drivers of CUDA 12.8 and later) holds cuEventElapsedTime on older drivers.
#define FA_CUDA_DRIVER_FUNCTIONS(X)                                            \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceTotalMem_v2)                                                       \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuModuleLoadDataEx)                                                        \
  X(cuLinkCreate_v2)                                                           \
  X(cuLinkAddData_v2)                                                          \
  X(cuLinkComplete)                                                            \
  X(cuLinkDestroy)                                                             \
  X(cuModuleGetFunction)                                                       \
  X(cuModuleUnload)                                                            \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemAllocAsync)                                                           \
  X(cuMemFreeAsync)                                                            \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuMemsetD8_v2)                                                             \
  X(cuMemsetD32Async)                                                          \
  X(cuStreamSynchronize)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime_v2)                                                     \
  X(cuEventDestroy_v2)                                                         \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuPointerGetAttribute)                                                     \
  X(cuTensorMapEncodeTiled)

/// The resolved entry points of one loaded driver library.
struct Api {
#define FA_CUDA_API_MEMBER(symbol) PFN_##symbol symbol = nullptr;
  FA_CUDA_DRIVER_FUNCTIONS(FA_CUDA_API_MEMBER)
#undef FA_CUDA_API_MEMBER
};

} // namespace fa::runtime::cu

#endif // FA_RUNTIME_CUDAAPI_H
