//===- CudaHeaderCheck.cpp - CudaApi.h against cuda.h ---------------------===//
//
// Compiled only where CMake finds the CUDA toolkit's cuda.h; produces no code.
// It checks at compile time that FA's own declarations (CudaApi.h) agree with
// cuda.h: every enum value, every entry point (the versioned symbol exists in
// the header) and the shape of every signature (same arity; each parameter
// and the result of the same size, pointers where cuda.h has pointers, and
// the same handle types).
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include "fa/Runtime/CudaApi.h"

#include <type_traits>

namespace {

template <typename T>
constexpr bool kIntegerLike = std::is_integral_v<T> || std::is_enum_v<T>;

template <typename A, typename B> constexpr bool compatible() {
  if constexpr (std::is_same_v<A, B>)
    return true;
  else if constexpr (std::is_pointer_v<A> && std::is_pointer_v<B>)
    return compatible<std::remove_cv_t<std::remove_pointer_t<A>>,
                      std::remove_cv_t<std::remove_pointer_t<B>>>() &&
           std::is_const_v<std::remove_pointer_t<A>> ==
               std::is_const_v<std::remove_pointer_t<B>>;
  else if constexpr (kIntegerLike<A> && kIntegerLike<B>)
    return sizeof(A) == sizeof(B);
  else
    return false;
}

template <typename A, typename B> struct SameShape : std::false_type {};
template <typename RA, typename... A, typename RB, typename... B>
struct SameShape<RA (*)(A...), RB (*)(B...)> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A) != sizeof...(B))
      return false;
    else
      return compatible<RA, RB>() && (compatible<A, B>() && ...);
  }();
};

} // namespace

namespace fa::runtime::cu {

#define FA_CHECK_SIGNATURE(symbol)                                             \
  static_assert(SameShape<decltype(&::symbol), PFN_##symbol>::value,           \
                #symbol " in CudaApi.h does not match cuda.h");
FA_CUDA_DRIVER_FUNCTIONS(FA_CHECK_SIGNATURE)
#undef FA_CHECK_SIGNATURE

static_assert(std::is_same_v<Context, ::CUcontext>);
static_assert(std::is_same_v<Module, ::CUmodule>);
static_assert(std::is_same_v<LinkState, ::CUlinkState>);
static_assert(std::is_same_v<Function, ::CUfunction>);
static_assert(std::is_same_v<Stream, ::CUstream>);
static_assert(std::is_same_v<Event, ::CUevent>);
static_assert(std::is_same_v<Device, ::CUdevice>);
static_assert(std::is_same_v<DevicePtr, ::CUdeviceptr>);
static_assert(std::is_same_v<TensorMap, ::CUtensorMap>);
// ParamBuffer (KernelAbi.h) stores maps as 128 bytes, 128-byte aligned.
static_assert(sizeof(::CUtensorMap) == 128 && alignof(::CUtensorMap) <= 128);
static_assert(sizeof(TensorMapDataType) == sizeof(::CUtensorMapDataType));
static_assert(sizeof(TensorMapInterleave) == sizeof(::CUtensorMapInterleave));
static_assert(sizeof(TensorMapSwizzle) == sizeof(::CUtensorMapSwizzle));
static_assert(sizeof(TensorMapL2Promotion) == sizeof(::CUtensorMapL2promotion));
static_assert(sizeof(TensorMapFloatOOBFill) ==
              sizeof(::CUtensorMapFloatOOBfill));
static_assert(sizeof(Result) == sizeof(::CUresult));
static_assert(sizeof(JitOption) == sizeof(::CUjit_option));
static_assert(sizeof(JitInputType) == sizeof(::CUjitInputType));

#define FA_CHECK_VALUE(name)                                                   \
  static_assert(static_cast<long long>(name) ==                                \
                    static_cast<long long>(::name),                            \
                #name " in CudaApi.h does not match cuda.h");
FA_CHECK_VALUE(CUDA_SUCCESS)
FA_CHECK_VALUE(CUDA_ERROR_INVALID_VALUE)
FA_CHECK_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
FA_CHECK_VALUE(CUDA_ERROR_NOT_INITIALIZED)
FA_CHECK_VALUE(CUDA_ERROR_NO_DEVICE)
FA_CHECK_VALUE(CUDA_ERROR_INVALID_IMAGE)
FA_CHECK_VALUE(CUDA_ERROR_NO_BINARY_FOR_GPU)
FA_CHECK_VALUE(CUDA_ERROR_INVALID_PTX)
FA_CHECK_VALUE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
FA_CHECK_VALUE(CUDA_ERROR_INVALID_HANDLE)
FA_CHECK_VALUE(CUDA_ERROR_NOT_FOUND)
FA_CHECK_VALUE(CUDA_ERROR_NOT_READY)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_WARP_SIZE)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
FA_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
FA_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
FA_CHECK_VALUE(CU_JIT_WALL_TIME)
FA_CHECK_VALUE(CU_JIT_INFO_LOG_BUFFER)
FA_CHECK_VALUE(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
FA_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER)
FA_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
FA_CHECK_VALUE(CU_JIT_LOG_VERBOSE)
FA_CHECK_VALUE(CU_JIT_INPUT_PTX)
FA_CHECK_VALUE(CU_POINTER_ATTRIBUTE_CONTEXT)
FA_CHECK_VALUE(CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
FA_CHECK_VALUE(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
FA_CHECK_VALUE(CU_MEMORYTYPE_HOST)
FA_CHECK_VALUE(CU_MEMORYTYPE_DEVICE)
FA_CHECK_VALUE(CU_MEMORYTYPE_ARRAY)
FA_CHECK_VALUE(CU_MEMORYTYPE_UNIFIED)
FA_CHECK_VALUE(CU_EVENT_DEFAULT)
FA_CHECK_VALUE(CU_EVENT_BLOCKING_SYNC)
FA_CHECK_VALUE(CU_EVENT_DISABLE_TIMING)
FA_CHECK_VALUE(CU_TENSOR_MAP_DATA_TYPE_UINT16)
FA_CHECK_VALUE(CU_TENSOR_MAP_DATA_TYPE_UINT32)
FA_CHECK_VALUE(CU_TENSOR_MAP_INTERLEAVE_NONE)
FA_CHECK_VALUE(CU_TENSOR_MAP_SWIZZLE_128B)
FA_CHECK_VALUE(CU_TENSOR_MAP_L2_PROMOTION_L2_128B)
FA_CHECK_VALUE(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
#undef FA_CHECK_VALUE

} // namespace fa::runtime::cu
