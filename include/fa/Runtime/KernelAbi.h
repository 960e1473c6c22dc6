//===- KernelAbi.h - How to call one of FA's GPU kernels --------*- C++ -*-===//
//
// The kernel ABI, stated once. A KernelAbi says of one kernel what each of
// its parameters is (a tensor's pointer or element stride, a problem size or
// a scalar of the call) and the machine type it is passed as, its grid rule,
// its threads per CTA and its dynamic shared memory. convert-fa-to-nvvm
// builds each kernel's signature from it and attaches it to the kernel as
// #fa.kernel_abi<...>; the launchers build the parameter buffer by walking
// it over one KernelCall (ParamBuffer) and the grid from its rule
// (getLaunchGrid); the kernel cache stores it as text (printKernelAbi,
// parseKernelAbi). Plain C++: no MLIR or LLVM type.
//
// The text (the attribute's body, and the cache's `abi` lines):
//
//   grid = [tiles(Nq, 64), Hq, B], threads = 128, shared = 81920,
//   params = [q : ptr, k : ptr, ..., stride(q, 0) : i64, ..., Nq : i32,
//             scale_log2 : f32, capture0 : ptr, stride(capture0, 0) : i64]
//
//   axis   := tiles(Nq, R) | tiles(Nk, R) | Hq | Hkv | B | 1
//           | persistent(Nq, R, C)
//   param  := value `:` (ptr | i32 | i64 | f32 | tmap)
//   value  := tensor                    its pointer (dq_accum(D): rows of D)
//           | stride(tensor, dim)       its element stride in dim
//           | tensor_map(tensor, D, R)  its TMA map, boxes of R rows (tmap)
//           | Nq | Nk | group | B | Hq | Hkv          (group = Hq / Hkv)
//           | scale_log2 | scale | seed
//   tensor := q | k | v | o | lse | do | dq | dk | dv | dsum | bias | slopes
//           | dbias | dq_accum | key_ranges | capture<i>
//
// The grid. x is the tiles of the queries or keys (or 1); y names the heads
// (Hq, Hkv or 1) and z the batch (B or 1). CUDA limits grid.y and grid.z to
// 65535: where H or B exceeds that, a launch folds them into one linear
// index over y and z, grid (x, min(H * B, 65535), ceil(H * B / 65535)),
// and only then (getLaunchGrid). A kernel tells the two apart by nctaid.y
// == H: unfolded, head = ctaid.y and batch = ctaid.z (special registers,
// which ptxas rematerializes instead of keeping in registers); folded,
// linear = ctaid.z * nctaid.y + ctaid.y, head = linear % H, batch = linear
// / H, and CTAs with linear >= H * B return. So a kernel whose y is H (or z
// is B) takes that size as a parameter (verifyKernelAbi checks it). A
// key-range kernel's y is tiles(Nk, R) and its z 1: its chunk is always
// ctaid.z * nctaid.y + ctaid.y, and chunks past Nk return.
// Tensor dims are those of fa.attention(_grad): q [B, Hq, Nq, D], lse
// [B, Hq, Nq], slopes [B, Hq] (stride(slopes, 0) is 0 for `[Hq]`), bias and
// dbias [B, H, Nq, Nk] (stride 0 where a dim broadcasts), dsum [B, Hq, Nq].
//
// A persistent kernel (grid [persistent(Nq, R, C), 1, 1]) has
// tiles(Nq, R) * Hq * B work items, which its CTAs share round robin
// (fagpu.work_slot): the launch makes min(items, C * the device's SMs) CTAs
// (or one an item where the SM count is not known). Its items are counted in
// 32 bits: more than 2^31 - 1 is an error.
//
// Key ranges. A forward whose mask_mod reads neither b nor h launches a
// key-range kernel first (grid [tiles(Nq, R), tiles(Nk, kKeyRangeChunk),
// 1], R the forward's query tile): CTA (t, c) evaluates the mask_mod on the
// keys of chunk c (its key tiles of kKeyRangeBlock keys that the causal and
// window masks leave) for the rows of query tile t. Each of its
// kKeyRangeWarps warps merges, with atomics, what its rows see into its
// record of kKeyRangeInts u32 at key_ranges[(t * kKeyRangeWarps + warp) *
// kKeyRangeInts]: {0} the max of ~first and {1} of last + 1 over the tiles
// where the mask_mod keeps a key of a row; {2} the max of ~first and {3} of
// last + 1 over the tiles of the chunk's run where it keeps every key of
// every row (rows past Nq and keys past Nk count as kept), and {4} the sum
// of those runs' lengths. The launcher zeroes the records first (0: none;
// cuMemsetD32Async on the launch's stream). The forward visits only keys
// [min first * kKeyRangeBlock, (max last + 1) * kKeyRangeBlock) and
// evaluates the mask_mod only outside [max full first * kKeyRangeBlock,
// (min full last + 1) * kKeyRangeBlock), a warp's full tiles counting as a
// run where {4} is last - first + 1 (else none). The launcher owns the
// buffer (getKeyRangesBytes).
//
// Tensor maps. `tensor_map(t, D, R) : tmap` is a CUtensorMap (128 bytes,
// passed by value as a grid constant) for TMA copies (cp.async.bulk.tensor)
// of t, one of q, k, v, o, do, dq, dk, dv: [B, H, N, D] of 2-byte elements
// with element stride 1 in D (N is Nq and H is Hq for q, o, do, dq; Nk and
// Hkv for k, v, dk, dv). A box holds R rows of all D columns, cut in 64-column
// (128-byte) panels, which land one after another in shared memory: fagpu's
// 128-byte-swizzled wgmma tile of R rows. A 5-D map, innermost first, of dims
// (64, N, D/64, H, B), byte strides of dims 1 to 4 (stride(t, 2) * 2, 128,
// stride(t, 1) * 2, stride(t, 0) * 2), box (64, R, D/64, 1, 1), element
// strides all 1, no interleave, 128-byte swizzle, L2 promotion 128B, zero
// fill out of bounds, data type UINT16 (the copy does not care whether the
// bits are bf16 or f16). Where D is not a multiple of 64 (80, 96), the map's
// dims are (D, N, 1, H, B) with the same strides and its box one panel, (64,
// R, 1, 1, 1): the kernel copies a tile as one box per panel, at column
// 64 p, and reads zeros past D. D is a positive multiple of 8 up to 16384, R
// is 1 to 256. The launch builds each map on the host per call
// (getTensorMapRequest, and cuTensorMapEncodeTiled through a
// TensorMapEncoder; ParamBuffer); a tensor without data (N, H or B 0) gets
// a map of zero bytes, which its kernel never reads.
//
// `tensor_map(bias, C, R)` is a bias's, for copies of [R, C] blocks of its
// [Nq, Nk] matrices (fa-bias-tiles): elements of 128 / C bytes (C = 64: f16
// or bf16, 32: f32; one 128-byte panel a box), key stride 1. A 5-D map of
// dims (Nk, Nq, H, B, 1), byte strides (stride(bias, 2), stride(bias, 1),
// stride(bias, 0), 16) times the element's bytes, box (C, R, 1, 1, 1),
// otherwise as above; a dim the bias broadcasts (stride 0) has size 1 and
// the kernel reads it at 0. Past Nq and Nk it reads zeros.
//
//===----------------------------------------------------------------------===//

#ifndef FA_RUNTIME_KERNELABI_H
#define FA_RUNTIME_KERNELABI_H

#include "fa/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace fa::runtime {

/// The key-range kernel's warps, the keys of one of its key tiles and of
/// one CTA's chunk (the file comment).
inline constexpr uint32_t kKeyRangeWarps = 4;
inline constexpr uint32_t kKeyRangeBlock = 128;
inline constexpr uint32_t kKeyRangeChunk = 128;
/// The u32 of one warp's record: (~first, last + 1, ~full first, full last
/// + 1, full tiles).
inline constexpr uint32_t kKeyRangeInts = 5;

/// The tensor a pointer or stride parameter belongs to.
enum class AbiTensor : uint8_t {
  Q,
  K,
  V,
  O,
  Lse,
  DO,
  DQ,
  DK,
  DV,
  /// The backward's f32 row sums of dO * O, [B, Hq, Nq] (a workspace).
  Dsum,
  Bias,
  /// ALiBi slopes, f32 [B, Hq] with head stride 1.
  Slopes,
  DBias,
  /// The backward's f32 dQ accumulator (atomic dQ): row (b, h, i) of D
  /// floats at Dsum's offset of (b, h, i) times D.
  DQAccum,
  /// The forward's i32 key ranges of a mask_mod (a workspace): per query
  /// tile of the kernel's rows, kKeyRangeWarps records of kKeyRangeInts
  /// key tiles of kKeyRangeBlock keys (the file comment).
  KeyRanges,
  /// One of the op's captures (KernelParam::capture says which).
  Capture,
};
inline constexpr size_t kNumAbiTensors = size_t(AbiTensor::Capture) + 1;

/// A problem size. Group is Hq / Hkv.
enum class AbiSize : uint8_t { Nq, Nk, Group, B, Hq, Hkv };
inline constexpr size_t kNumAbiSizes = size_t(AbiSize::Hkv) + 1;

/// A scalar of the call: scale * log2(e), the scale, the dropout seed.
enum class AbiScalar : uint8_t { ScaleLog2, Scale, Seed };

/// How a parameter is passed: its bytes in the parameter buffer.
/// TensorMap: a CUtensorMap, 128 bytes passed by value.
enum class MachineType : uint8_t { I32, I64, F32, Ptr, TensorMap };

/// One parameter of a kernel: what it is, and its machine type.
struct KernelParam {
  enum class Kind : uint8_t { Pointer, Stride, Size, Scalar, TensorMap };
  Kind kind = Kind::Pointer;
  MachineType type = MachineType::Ptr;
  /// Pointer, Stride: the tensor (Capture: capture number `capture`).
  AbiTensor tensor = AbiTensor::Q;
  uint32_t capture = 0;
  /// Stride: the dim. Pointer to DQAccum: its row length (D floats).
  /// TensorMap: the tensor's columns (its head dim D).
  uint32_t dim = 0;
  AbiSize size = AbiSize::Nq;
  AbiScalar scalar = AbiScalar::ScaleLog2;
  /// TensorMap: the rows of one box (one TMA copy).
  uint32_t boxRows = 0;

  static KernelParam pointer(AbiTensor tensor);
  static KernelParam capturePointer(uint32_t capture);
  static KernelParam dqAccum(uint32_t columns);
  static KernelParam stride(AbiTensor tensor, uint32_t dim,
                            MachineType type = MachineType::I64);
  static KernelParam captureStride(uint32_t capture, uint32_t dim,
                                   MachineType type = MachineType::I64);
  static KernelParam ofSize(AbiSize size, MachineType type = MachineType::I32);
  static KernelParam ofScalar(AbiScalar scalar, MachineType type);
  /// The TMA map of `tensor` (one of q, k, v, o, do, dq, dk, dv), of
  /// `columns` (D) columns, in boxes of `boxRows` rows (the file comment).
  static KernelParam tensorMap(AbiTensor tensor, uint32_t columns,
                               uint32_t boxRows);

  /// Whether both name the same value (the machine type aside).
  bool sameValue(const KernelParam &other) const;
  bool operator==(const KernelParam &other) const {
    return sameValue(other) && type == other.type;
  }
  bool operator!=(const KernelParam &other) const { return !(*this == other); }
};

/// One axis of a grid rule.
struct GridAxis {
  enum class Kind : uint8_t { One, TilesNq, TilesNk, Hq, Hkv, B, Persistent };
  Kind kind = Kind::One;
  /// TilesNq, TilesNk, Persistent: rows per tile (the axis is ceil(N /
  /// rows)).
  uint32_t rows = 0;
  /// Persistent: CTAs an SM holds at once.
  uint32_t ctasPerSM = 0;

  static GridAxis one() { return {Kind::One, 0}; }
  static GridAxis tilesNq(uint32_t rows) { return {Kind::TilesNq, rows}; }
  static GridAxis tilesNk(uint32_t rows) { return {Kind::TilesNk, rows}; }
  static GridAxis hq() { return {Kind::Hq, 0}; }
  static GridAxis hkv() { return {Kind::Hkv, 0}; }
  static GridAxis batch() { return {Kind::B, 0}; }
  static GridAxis persistent(uint32_t rows, uint32_t ctasPerSM) {
    return {Kind::Persistent, rows, ctasPerSM};
  }

  bool operator==(const GridAxis &other) const {
    return kind == other.kind && rows == other.rows &&
           ctasPerSM == other.ctasPerSM;
  }
  bool operator!=(const GridAxis &other) const { return !(*this == other); }
};

/// A kernel's grid: x tiles (or 1), y heads (Hq, Hkv or 1; a key-range
/// kernel's key chunks, tiles(Nk, R)), z batch (B or 1); y and z are folded
/// where either exceeds 65535 (the file comment).
struct GridRule {
  GridAxis x, y, z;

  bool operator==(const GridRule &other) const {
    return x == other.x && y == other.y && z == other.z;
  }
  bool operator!=(const GridRule &other) const { return !(*this == other); }
};

/// How to call one kernel.
struct KernelAbi {
  /// The kernel's .entry name (not part of the text).
  std::string name;
  GridRule grid;
  uint32_t threads = 0;
  /// Dynamic shared memory per CTA, in bytes.
  uint32_t sharedBytes = 0;
  std::vector<KernelParam> params;

  bool operator==(const KernelAbi &other) const;
  bool operator!=(const KernelAbi &other) const { return !(*this == other); }
};

/// The names of the text.
const char *getName(AbiTensor tensor);
const char *getName(AbiSize size);
const char *getName(AbiScalar scalar);
const char *getName(MachineType type);
/// Bytes of a parameter of `type` (128 for a tensor map).
size_t getByteSize(MachineType type);
/// The rank of `tensor` (0 for Capture: any).
unsigned getRank(AbiTensor tensor);

/// Checks that `abi` is well formed: threads 1 to 1024; x tiles or 1, y Hq,
/// Hkv or 1, z B or 1, with H and B parameters where y and z need them;
/// pointers of type ptr, strides of existing dims (i32 or i64), sizes i32
/// or i64, scales f32, the seed i64; tensor maps of type tmap (and only
/// they), of q, k, v, o, do, dq, dk or dv, with D a positive multiple of 8
/// up to 16384 and 1 to 256 box rows; no parameter twice; captures
/// numbered from 0, each with its pointer and strides of dims 0 to rank - 1.
Status verifyKernelAbi(const KernelAbi &abi);

/// The text of a parameter, an axis, a grid rule and a whole ABI (without
/// its name).
std::string printKernelParam(const KernelParam &param);
std::string printGridAxis(const GridAxis &axis);
std::string printGridRule(const GridRule &rule);
std::string printKernelAbi(const KernelAbi &abi);
/// Parses printKernelAbi's text (spaces between tokens are free) and
/// verifies it; the name is left empty. An error says where and why.
Expected<KernelAbi> parseKernelAbi(std::string_view text);

/// The index of the parameter that is `param`'s value in `abi`, or -1.
int64_t findParam(const KernelAbi &abi, const KernelParam &param);
/// The rank of each capture `abi` takes (its strides' count), in order.
std::vector<uint32_t> getCaptureRanks(const KernelAbi &abi);
/// D of the dQ accumulator `abi` takes, or 0.
uint32_t getDQAccumColumns(const KernelAbi &abi);
/// Whether `abi` takes key ranges (the file comment).
bool takesKeyRanges(const KernelAbi &abi);

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

/// The values of one call, by what they are: what any kernel's parameters
/// are read from. One struct serves the forward and each backward kernel;
/// what a kernel does not take may stay 0.
struct KernelCall {
  /// A device pointer and element strides (dims in AbiTensor's order).
  struct Tensor {
    uint64_t data = 0;
    int64_t strides[4] = {};
  };
  /// A capture: its pointer and one stride per dim.
  struct Capture {
    uint64_t data = 0;
    std::vector<int64_t> strides;
  };

  Tensor tensors[kNumAbiTensors - 1];
  std::vector<Capture> captures;
  int64_t batch = 0, headsQ = 0, headsKV = 0, seqQ = 0, seqKV = 0;
  float scaleLog2 = 0, scale = 0;
  int64_t seed = 0;
  /// A persistent grid's CTAs at most (0: as many as the device's SMs
  /// hold, getLaunchGrid).
  int64_t persistentCtas = 0;

  Tensor &operator[](AbiTensor tensor) { return tensors[size_t(tensor)]; }
  const Tensor &operator[](AbiTensor tensor) const {
    return tensors[size_t(tensor)];
  }
  /// Sets `tensor`'s pointer and its first strides.
  void set(AbiTensor tensor, uint64_t data,
           std::initializer_list<int64_t> strides);
  /// The value of `size` (Group: Hq / Hkv; an error unless Hkv divides Hq).
  Expected<int64_t> getSize(AbiSize size) const;
};

/// CUDA's grid limits.
inline constexpr uint32_t kMaxGridX = 0x7fffffff;
inline constexpr uint32_t kMaxGridYZ = 65535;

/// A launch's grid.
struct GridSize {
  uint32_t x = 0, y = 0, z = 0;
  bool empty() const { return !x || !y || !z; }
};

/// The extent of `axis` for `call`: ceil(N / rows) for tiles, the size, or 1.
Expected<int64_t> getExtent(const GridAxis &axis, const KernelCall &call);
/// The grid of `rule` for `call`: (x, H, B) with H, B the extents of y and
/// z, or where either exceeds 65535 (x, min(H * B, 65535), ceil(H * B /
/// 65535)); empty when an extent is 0. An error when x exceeds 2^31 - 1 or
/// H * B exceeds 65535^2. A persistent x is min(items, the call's
/// persistentCtas) where it sets them, else min(items, C *
/// multiprocessors), or the items where `multiprocessors` is 0.
Expected<GridSize> getLaunchGrid(const GridRule &rule, const KernelCall &call,
                                 uint32_t multiprocessors = 0);
/// Bytes of the key ranges of a kernel whose grid x is `rule`'s (tiles of
/// Nq) for `call`, at least 256.
uint64_t getKeyRangesBytes(const GridRule &rule, const KernelCall &call);

/// What cuTensorMapEncodeTiled is called with for one tensor-map parameter
/// (the file comment): rank 5, data type UINT16, element strides 1, no
/// interleave, 128-byte swizzle, L2 promotion 128B, zero fill.
struct TensorMapRequest {
  uint64_t data = 0;        // the tensor's device pointer
  uint64_t dims[5] = {};    // elements, innermost first
  uint64_t strides[4] = {}; // bytes, of dims 1..4
  uint32_t box[5] = {};
  uint32_t elementBytes = 2; // 2 (UINT16) or 4 (UINT32, an f32 bias)
};

/// The request of `param` (a tensor map) for `call`: dims (64, N, D/64, H,
/// B), byte strides (stride(t, 2) * 2, 128, stride(t, 1) * 2, stride(t, 0) *
/// 2), box (64, boxRows, D/64, 1, 1); where D is not a multiple of 64, dims
/// (D, N, 1, H, B) and box (64, boxRows, 1, 1, 1). The bias's (the file
/// comment): dims (Nk, Nq, H, B, 1), box (C, boxRows, 1, 1, 1) of 128 / C
/// byte elements, a broadcast dim (stride 0) of size 1. An error when the
/// data is not 16-byte aligned, the bias's key stride is not 1, or a stride is
/// not a multiple of 16 bytes or is 2^40 or more (the driver's limits), or a
/// size is negative.
Expected<TensorMapRequest> getTensorMapRequest(const KernelParam &param,
                                               const KernelCall &call);

/// Fills the 128 bytes at `map` (128-byte aligned) from `request`: the CUDA
/// runtime's encodeTensorMap (Cuda.h) with the driver of the launch's
/// device, or a test's stand-in.
using TensorMapEncoder =
    std::function<Status(const TensorMapRequest &request, void *map)>;

/// The parameters of one launch: each value of `call` that `abi` names, in
/// its machine type, and the pointers to them cuLaunchKernel takes.
class ParamBuffer {
public:
  /// An error when the call lacks what the kernel takes (its captures'
  /// count and ranks must match), or a value does not fit its type. Tensor
  /// maps are encoded with `encoder` into 128 bytes (128-byte aligned) that
  /// the buffer owns; a map of a tensor without data (N, H or B 0) is left
  /// zero and `encoder` is not called. An error when a map must be encoded
  /// and there is no encoder, or the request or the encoder fails.
  static Expected<ParamBuffer> build(const KernelAbi &abi,
                                     const KernelCall &call,
                                     TensorMapEncoder encoder = nullptr);

  ParamBuffer(ParamBuffer &&) = default;
  ParamBuffer &operator=(ParamBuffer &&) = default;
  ParamBuffer(const ParamBuffer &) = delete;
  ParamBuffer &operator=(const ParamBuffer &) = delete;

  /// One pointer per parameter, to its bytes (a tensor map's 128). Valid
  /// while the buffer is, moves included.
  void **getArgs() { return args.data(); }
  size_t size() const { return slots.size(); }
  /// The bits of parameter `i` (4-byte types in the low half; 0 for a
  /// tensor map).
  uint64_t getBits(size_t i) const { return slots[i]; }
  /// The 128 bytes of parameter `i` if it is a tensor map, else nullptr.
  const void *getTensorMap(size_t i) const {
    return i < mapIndex.size() && mapIndex[i] >= 0 ? &maps[size_t(mapIndex[i])]
                                                   : nullptr;
  }

private:
  /// A CUtensorMap's bytes, aligned as cuda.h's CUtensorMap is.
  struct alignas(128) TensorMapBytes {
    uint64_t words[16];
  };
  static_assert(sizeof(TensorMapBytes) == 128);

  ParamBuffer() = default;
  std::vector<uint64_t> slots;
  /// Heap storage: moving the buffer keeps the pointers in `args` valid.
  std::vector<TensorMapBytes> maps;
  /// Per parameter: its map's index in `maps`, or -1.
  std::vector<int32_t> mapIndex;
  std::vector<void *> args;
};

} // namespace fa::runtime

#endif // FA_RUNTIME_KERNELABI_H
