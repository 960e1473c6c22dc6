//===- HostJit.h - Compile and run attention on the host --------*- C++ -*-===//
//
// The host side of fa-jit (and of the APIs): wrap one fa.attention or
// fa.attention_grad in a kernel function with a strided-memref ABI, lower it
// with fa-pipeline-host, JIT-compile it with MLIR's ExecutionEngine and call
// it on host buffers. Also evaluates score_mod / mask_mod regions in double
// so that the float64 reference can check them.
//
// Internal: this header exposes MLIR types; fa.h does not.
//
//===----------------------------------------------------------------------===//

#ifndef FA_COMPILER_HOSTJIT_H
#define FA_COMPILER_HOSTJIT_H

#include "fa/Compiler/Pipelines.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace mlir::fa {

/// The name of the kernel function of an fa.attention; its C interface is
/// `_mlir_ciface_fa_forward`.
inline constexpr const char *kHostKernelName = "fa_forward";
/// The name of the kernel function of an fa.attention_grad
/// (`_mlir_ciface_fa_backward`).
inline constexpr const char *kHostBackwardKernelName = "fa_backward";

/// Returns the single fa.attention nested in `root`. Emits an error on `root`
/// and fails when there is none or more than one.
FailureOr<AttentionOp> findSingleAttention(Operation *root);

/// Returns the single fa.attention or fa.attention_grad nested in `root`.
/// Emits an error on `root` and fails when there is none or more than one
/// (of both kinds together).
FailureOr<Operation *> findSingleAttentionOp(Operation *root);

/// Builds a module holding, for an fa.attention,
///
///   func.func @fa_forward(Q, K, V, [bias], [alibi_slopes], [seed: i64],
///                         O, [lse]) attributes {llvm.emit_c_interface}
///
/// and for an fa.attention_grad
///
///   func.func @fa_backward(Q, K, V, O, dO, lse, [bias], [alibi_slopes],
///                          [seed: i64], dQ, dK, dV, [dBias])
///
/// that is the op's operands, then its results as output buffers. Every
/// tensor becomes a memref with the op's shape (static dims stay static) and
/// a fully dynamic strided layout, so callers may pass any strides. Memref
/// arguments are `llvm.noalias`: the outputs must not overlap any other
/// argument (HostKernel::run checks). The body reads the inputs with
/// `bufferization.to_tensor restrict`, runs a clone of `op` (attributes and
/// regions included) and writes each result with
/// `bufferization.materialize_in_destination ... restrict writable`. Returns
/// null, with an error on `op`, for any other op.
OwningOpRef<ModuleOp> buildHostKernelModule(Operation *op);

/// Builds a module holding `func.func @attention(Q, K, V, [bias],
/// [alibi_slopes], [seed]) -> (O, lse)`: the fa.attention whose backward is
/// `grad` (same variant, regions but score_mod_grad), with the lse that the
/// backward needs.
OwningOpRef<ModuleOp> buildForwardOfGrad(AttentionGradOp grad);

/// Builds a module holding `func.func @attention_grad(Q, K, V, O, dO, lse,
/// [bias], [alibi_slopes], [seed]) -> (dQ, dK, dV, [dBias])`: the
/// fa.attention_grad of `forward`'s variant (lse typed f32 [B, Hq, Nq] after
/// O, whether or not `forward` returns it), with dBias when `gradBias` is set
/// and `forward` has a bias. Its score_mod_grad is left for
/// fa-differentiate-score-mod.
OwningOpRef<ModuleOp> buildGradOfForward(AttentionOp forward,
                                         bool gradBias = false);

/// The width in bits of this CPU's vector registers, as fa-pipeline-host's
/// `vector-bits` takes it: 512 with AVX-512, 256 with AVX, else 128.
int64_t getHostVectorBits();

/// Runs fa-pipeline-host on `module`; failures are reported through the
/// context's diagnostics. At `vector-bits` 512 the LLVM functions prefer
/// 512-bit vectors.
LogicalResult lowerHostKernelModule(ModuleOp module,
                                    const HostPipelineOptions &options);

/// Translates a module in the LLVM dialect to LLVM IR and prints it.
LogicalResult printHostLLVMIR(ModuleOp module, llvm::raw_ostream &os);

/// One argument of the kernel: a host buffer seen as a strided memref, or an
/// i64 scalar (the dropout seed).
struct HostKernelArg {
  /// The first element of the underlying allocation; nullptr for a scalar.
  void *data = nullptr;
  /// Offset, sizes and strides in elements.
  int64_t offset = 0;
  llvm::SmallVector<int64_t, 4> sizes;
  llvm::SmallVector<int64_t, 4> strides;
  int64_t scalar = 0;

  /// A row-major buffer of `sizes`.
  static HostKernelArg contiguous(void *data, llvm::ArrayRef<int64_t> sizes);
  static HostKernelArg i64(int64_t value);
  bool isScalar() const { return data == nullptr; }
};

/// A kernel module JIT-compiled for the host CPU.
class HostKernel {
public:
  /// Lowers `kernelModule` (as built by buildHostKernelModule, forward or
  /// backward; it is lowered in place) and JIT-compiles it (LLVM O2, aggressive
  /// codegen). Pipeline failures are reported through the context's diagnostics
  /// and give an error saying the pipeline failed.
  static llvm::Expected<std::unique_ptr<HostKernel>>
  compile(ModuleOp kernelModule, const HostPipelineOptions &options);

  ~HostKernel();

  /// Calls the kernel (@fa_forward or @fa_backward). `args` follow its
  /// signature: memrefs of the declared ranks, the seed as a scalar. Fails,
  /// without calling, when an output overlaps another argument. A kernel
  /// whose tile loops fa-host-parallel shared runs on getHostThreads()
  /// threads (the caller's and pool threads), at most `maxThreads` when it
  /// is positive; its results do not depend on their number.
  llvm::Error run(llvm::ArrayRef<HostKernelArg> args, int maxThreads = 0);

private:
  HostKernel() = default;

  std::unique_ptr<ExecutionEngine> engine;
  /// kHostKernelName or kHostBackwardKernelName.
  std::string name;
  /// Per argument of the kernel: its memref rank, or -1 for an i64.
  llvm::SmallVector<int64_t> argRanks;
  /// Per argument: bytes per element (0 for an i64).
  llvm::SmallVector<int64_t> argElementBytes;
  /// The trailing memref arguments that the kernel writes (O, [lse] or dQ,
  /// dK, dV, [dBias]).
  int64_t numOutputs = 0;
  /// fa.shared_loops: the counters the kernel takes after `args` (0: it
  /// runs on the calling thread alone).
  int64_t numSharedLoops = 0;
  /// The packed C interface of the kernel.
  void (*entry)(void **) = nullptr;
};

/// The threads a host kernel runs on: the last setHostThreads(n > 0), else
/// $FA_NUM_THREADS when it is a positive integer, else every hardware thread
/// the process may use. Helpers come from one process-wide pool of at most
/// that many hardware threads, so a larger number only queues.
int getHostThreads();
/// Sets the host threads of later calls; 0 restores the default.
void setHostThreads(int threads);

/// A capture as RegionEvaluator reads it: its elements as doubles, in C
/// order.
struct RegionCapture {
  const double *values = nullptr;
  llvm::SmallVector<int64_t, 4> shape;
};

/// A score_mod or mask_mod region compiled into a small program that
/// evaluates it in double (integers as exact doubles, i1 as 0 / 1), for the
/// float64 reference. Evaluation is read-only, so one program may run on many
/// threads at once.
class RegionEvaluator {
public:
  /// Compiles the single block of `region`. Fails with `error` naming the
  /// first op it cannot evaluate.
  static FailureOr<RegionEvaluator> compile(Region &region, std::string &error);

  /// Evaluates the region on `args` (one per scalar block argument) and
  /// `captures` (one per tensor block argument, the op's captures) and
  /// returns the value it yields. A tensor.extract outside its capture gives
  /// NaN, so that a check against the reference fails.
  double evaluate(llvm::ArrayRef<double> args,
                  llvm::ArrayRef<RegionCapture> captures = {}) const;

  struct Instruction;

private:
  int64_t numSlots = 0;
  /// Scalar block arguments; the captures follow them.
  int64_t numArgs = 0;
  int64_t resultSlot = 0;
  std::shared_ptr<const std::vector<Instruction>> program;
};

} // namespace mlir::fa

#endif // FA_COMPILER_HOSTJIT_H
