//===- fa.h - FA's public C++ API -------------------------------*- C++ -*-===//
//
// What programs include to use FA. It exposes no MLIR or LLVM type: link
// libfa.so, which carries its own MLIR/LLVM and exports nothing else.
//
//   fa::AttentionSpec spec;
//   spec.dtype = fa::DType::F32;
//   spec.headDim = 64;
//   spec.causal = fa::Causal::BottomRight;
//   fa::Kernel kernel = fa::compile(spec);          // JIT, once per variant
//   kernel.forward(q, k, v, out);                    // any B, H, N, strides
//
//===----------------------------------------------------------------------===//

#ifndef FA_FA_H
#define FA_FA_H

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fa {

/// The one exception type FA's API throws; what() holds the diagnostics.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// FA's version, "MAJOR.MINOR.PATCH".
std::string version();

/// Host kernels run on this many threads: the last setNumThreads(n > 0),
/// else $FA_NUM_THREADS, else every hardware thread the process may use
/// (helpers come from one pool of at most the hardware threads). Results do
/// not depend on it, bit for bit.
int numThreads();
/// Sets the host threads of later calls (all kernels); 0 restores the
/// default.
void setNumThreads(int threads);

/// Parses `mlir` (textual IR holding fa ops), verifies it, runs the textual
/// pass pipeline `pipeline` on it (e.g. "builtin.module(fa-decompose)") and
/// returns the resulting IR as text. Throws fa::Error carrying every
/// diagnostic (with its location) when parsing, verification or a pass fails.
std::string runPipeline(const std::string &mlir, const std::string &pipeline);

/// Q, K, V, O and the bias are f16, bf16 or f32; captures may also be f64 or
/// integers.
enum class DType { F16, BF16, F32, F64, I8, I16, I32, I64 };
enum class Device { CPU, CUDA };
enum class Causal { None, TopLeft, BottomRight };

/// "f16", "bf16", "f32", "f64", "i8", "i16", "i32" or "i64".
const char *toString(DType dtype);

/// A tensor someone else owns: a pointer to element [0, ..., 0], its shape
/// and its strides in elements (empty: row-major), and where it lives: the
/// host, or CUDA device `deviceIndex` (cuda:N; ignored for the host).
struct TensorView {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  Device device = Device::CPU;
  int deviceIndex = 0;
};

/// A tensor that score_mod / mask_mod read (a "capture"): per-token document
/// ids, per-head tables. Its sizes are given at call time.
struct CaptureSpec {
  DType dtype = DType::I32;
  /// >= 1.
  int64_t rank = 1;
};

/// Everything a kernel is compiled for. Batch size and sequence lengths are
/// never part of it: one kernel serves them all.
struct AttentionSpec {
  DType dtype = DType::BF16;
  /// D (of Q and K) and Dv (of V and O; 0: same as D).
  int64_t headDim = 64;
  int64_t headDimV = 0;
  /// Query and key/value heads; 0 leaves them to the call (Hq a multiple of
  /// Hkv is still checked then).
  int64_t numHeadsQ = 0;
  int64_t numHeadsKV = 0;
  /// Default 1/sqrt(D).
  std::optional<double> scale;
  Causal causal = Causal::None;
  /// Sliding window [left, right] around the bottom-right diagonal.
  std::optional<std::pair<int64_t, int64_t>> window;
  std::optional<double> softcap;
  /// ALiBi slopes operand: f32 [Hq], or [B, Hq] when alibiPerBatch.
  bool alibi = false;
  bool alibiPerBatch = false;
  /// Additive bias operand, rank 4 [B, Hq, Nq, Nk]; a dim marked in
  /// biasBroadcast has size 1.
  bool bias = false;
  DType biasDType = DType::F32;
  std::array<bool, 4> biasBroadcast = {false, false, false, false};
  /// Dropout probability (0: none).
  double dropoutP = 0.0;
  /// Bodies of the score_mod / mask_mod regions as MLIR (arith/math ops).
  /// score_mod sees %score: f32, %b, %h, %q_idx, %kv_idx: index and ends with
  /// `fa.yield %x : f32`; mask_mod sees %b, %h, %q_idx, %kv_idx and ends with
  /// `fa.yield %keep : i1`.
  std::string scoreMod;
  std::string maskMod;
  /// Tensors both regions may read: after their index arguments they see
  /// %cap0, %cap1, ... of type tensor<?x...xT> (rank and dtype from here)
  /// and read elements with tensor.extract. forward and backward take one
  /// view per capture, in order. Indices are not bounds-checked: one out of
  /// range reads outside the view, as in C.
  std::vector<CaptureSpec> captures;
  /// Also return the log-sum-exp [B, Hq, Nq] (f32).
  bool returnLse = false;
  /// GPU backward, how dQ is computed. `atomicDQ`: the dK/dV kernel adds it
  /// into an f32 accumulator (FlashAttention's way: atomics, bulk
  /// reductions on sm_90a), and its last bits vary from run to run.
  /// `deterministic`: a dQ kernel recomputes the scores and writes each
  /// element once, bitwise reproducible. Neither (the default): atomic
  /// where that is FA's fastest backward (sm_90a, no bias, ALiBi, score_mod,
  /// mask_mod, dropout or softcap, D = 64 or 128), else deterministic. Both
  /// is an error.
  bool atomicDQ = false;
  bool deterministic = false;
};

/// A compiled attention variant. Cheap to copy; safe to call from several
/// threads at once.
class Kernel {
public:
  /// O = attention(Q, K, V): Q [B, Hq, Nq, D], K [B, Hkv, Nk, D],
  /// V [B, Hkv, Nk, Dv], out [B, Hq, Nq, Dv]; lse [B, Hq, Nq] f32 when the
  /// spec returns it. Checks every view against the spec and the others
  /// before running and throws fa::Error naming the argument otherwise.
  /// Nk = 0 gives O = 0 and lse = -inf; views with no elements may have
  /// null data.
  /// A GPU kernel takes CUDA views (rows contiguous and 16-byte aligned), all
  /// on one device, and runs there (in that device's primary context; the
  /// thread's current context is the same after the call as before) on
  /// `stream` (a CUstream of that device; null: the default stream) without
  /// synchronizing or allocating (but see `workspace`): a CUDA graph may
  /// capture it once the kernel ran on the device (the first call there
  /// loads it). A view on another device than q's is an error ("k is on
  /// cuda:1 but q is on cuda:0"). `captures` are the views of
  /// spec.captures (any sizes and strides; on q's device).
  /// A mask_mod whose kept keys form ranges (documents, say) adds a kernel
  /// that finds each query tile's key range first; the ranges live in
  /// `workspace`: at least forwardWorkspaceBytes() bytes of device memory on
  /// q's device (contiguous, 256-byte aligned) that must stay alive until
  /// the stream has run the forward; the call zeroes them on the stream
  /// first (cuMemsetD32Async), so any memory will do. Without one such a
  /// call takes them from the stream-ordered allocator (cuMemAllocAsync)
  /// and frees them on the stream: still no host wait, but an allocation.
  void forward(const TensorView &q, const TensorView &k, const TensorView &v,
               const TensorView &out, const TensorView *lse = nullptr,
               const TensorView *bias = nullptr,
               const TensorView *alibiSlopes = nullptr, int64_t dropoutSeed = 0,
               void *stream = nullptr,
               const std::vector<TensorView> &captures = {},
               const TensorView *workspace = nullptr) const;

  /// Bytes of the workspace forward() takes for Q of batch size `batch`,
  /// `headsQ` heads and `seqQ` rows: 0 unless the GPU kernel finds key
  /// ranges (see forward), and always 0 for a host kernel.
  size_t forwardWorkspaceBytes(int64_t batch, int64_t headsQ,
                               int64_t seqQ) const;

  /// dQ, dK, dV of forward's O: given forward's inputs, its out and lse
  /// [B, Hq, Nq] (f32; from a kernel of the same spec with returnLse), and
  /// dout = dLoss/dO [B, Hq, Nq, Dv], writes dq, dk and dv (the shapes of q,
  /// k and v, the spec's dtype; a K/V head shared by several query heads gets
  /// the sum over them). bias, alibiSlopes and dropoutSeed are forward's.
  /// Checks every view like forward does before running. The backward kernel
  /// is compiled on the first call and shared by copies of this kernel. A
  /// GPU kernel takes CUDA views (as forward, on one device) and runs on
  /// `stream` without waiting on the host. Its workspace (Dsum and the f32
  /// dQ accumulator) is `workspace`: at least backwardWorkspaceBytes() bytes
  /// of device memory on q's device (a CUDA view of any dtype, contiguous,
  /// 256-byte aligned) that the call overwrites and that must stay alive
  /// until the stream has run the backward. With a workspace the call
  /// allocates nothing (a CUDA graph may capture it); without one it takes
  /// the workspace from the stream-ordered allocator (cuMemAllocAsync) and
  /// frees it on the stream (cuMemFreeAsync). A host kernel ignores it.
  /// With `dbias`, also writes dLoss/dbias, of the bias's dtype and compiled
  /// shape (summed over its broadcast dims). `captures` are forward's; they
  /// get no gradient.
  void backward(const TensorView &q, const TensorView &k, const TensorView &v,
                const TensorView &out, const TensorView &dout,
                const TensorView &lse, const TensorView &dq,
                const TensorView &dk, const TensorView &dv,
                const TensorView *bias = nullptr,
                const TensorView *alibiSlopes = nullptr,
                int64_t dropoutSeed = 0, void *stream = nullptr,
                const TensorView *dbias = nullptr,
                const std::vector<TensorView> &captures = {},
                const TensorView *workspace = nullptr) const;

  /// Bytes of the workspace backward() takes for Q of batch size `batch`,
  /// `headsQ` heads and `seqQ` rows (with `dbias`: of the backward that also
  /// writes dBias); 0 for a host kernel. Compiles the backward if no call
  /// did yet.
  size_t backwardWorkspaceBytes(int64_t batch, int64_t headsQ, int64_t seqQ,
                                bool dbias = false) const;

  /// The fa.attention the kernel was compiled from.
  const std::string &mlir() const;
  /// Where it runs: "host" or the GPU chip ("sm_80", "sm_90a", ...).
  const std::string &target() const;
  /// The PTX of a GPU kernel (what the CUDA driver loads). Throws fa::Error
  /// for a host kernel, which has none.
  const std::string &ptx() const;
  const AttentionSpec &spec() const;

  struct Impl;

private:
  friend Kernel compile(const AttentionSpec &, const std::string &);
  std::shared_ptr<const Impl> impl;
};

/// Compiles `spec` for `target`: "host", a GPU chip ("sm_80", "sm_90a"),
/// "cuda:N" (device N's chip) or "auto" (the first CUDA device's chip, else
/// the host). A GPU kernel runs on every device whose compute capability
/// runs its chip, loaded on each on its first call there. GPU kernels come
/// from the kernel cache ($FA_CACHE_DIR) when compiled before. Threads may
/// compile at the same time (each compilation has its own MLIR context).
/// Throws fa::Error when the spec is invalid, not supported on the target, or
/// compilation fails.
Kernel compile(const AttentionSpec &spec, const std::string &target = "host");

} // namespace fa

#endif // FA_FA_H
