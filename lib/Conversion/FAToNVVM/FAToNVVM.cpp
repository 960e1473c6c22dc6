//===- FAToNVVM.cpp - convert-fa-to-nvvm ----------------------------------===//
//
// The last step of the GPU route: each kernel of the gpu.module becomes an
// llvm.func of NVVM ops, its launches take the kernel's ABI (KernelAbi.h).
//
//  - Forward kernels are in the kernel-level IR (fa-tile, fa-online-softmax,
//    fa-async-copy): FAGPUToNVVM.cpp lowers them op by op; rewriteLaunch
//    passes each ABI parameter by the role fa-tile gave the kernel's
//    arguments (fa.abi).
//  - fa.attention_grad becomes the backward's kernels (AttentionGradToNVVM).
//
// A forward kernel still holding its fa.attention is refused, with the
// reason where the GPU does not support the op.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradToNVVM.h"
#include "FAGPUToNVVM.h"
#include "KernelBuilder.h"
#include "fa/Conversion/Passes.h"
#include "fa/Dialect/FA/IR/FAOps.h"
#include "fa/Target/GpuTarget.h"
#include "fa/Transforms/GpuKernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

namespace mlir::fa {
#define GEN_PASS_DEF_CONVERTFATONVVM
#include "fa/Conversion/Passes.h.inc"
} // namespace mlir::fa

using namespace mlir;
using namespace mlir::fa;
using namespace mlir::fa::nvvm;

namespace {

/// Which argument of an outlined kernel each part of its fa.attention is
/// (-1 when the op has none).
struct KernelArgs {
  int64_t q = -1, k = -1, v = -1, o = -1, lse = -1, bias = -1, slopes = -1,
          seed = -1, keyRanges = -1;
  SmallVector<int64_t> captures;
};

/// Rewrites the operands of `launch` (the memrefs and scalars fa-fuse
/// passes) into the values `abi` names, in its order, its grid into that of
/// `abi.grid` (folded where H or B exceeds 65535: KernelAbi.h), and its
/// shared memory into the kernel's.
void rewriteLaunch(gpu::LaunchFuncOp launch, const KernelArgs &args,
                   const ::fa::runtime::KernelAbi &abi) {
  using ::fa::runtime::AbiScalar;
  using ::fa::runtime::AbiSize;
  using ::fa::runtime::AbiTensor;
  using ::fa::runtime::GridAxis;
  using ::fa::runtime::KernelParam;
  using ::fa::runtime::MachineType;
  OpBuilder b(launch);
  Location loc = launch.getLoc();
  ValueRange given = launch.getKernelOperands();
  Type i32 = b.getI32Type(), i64 = b.getI64Type(), f32 = b.getF32Type();
  auto gptr = LLVM::LLVMPointerType::get(b.getContext(), kGlobal);
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  auto zero64 = [&]() -> Value {
    return arith::ConstantIntOp::create(b, loc, i64, 0);
  };
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // A memref as the kernel sees it: the address of its first element, its
  // sizes and its element strides (index; the kernel takes them as i64).
  // Described once, where first used.
  struct Buffer {
    Value ptr;
    SmallVector<Value> sizes, strides;
  };
  DenseMap<int64_t, Buffer> described;
  auto describe = [&](int64_t arg) -> const Buffer & {
    auto it = described.find(arg);
    if (it != described.end())
      return it->second;
    Value memref = given[arg];
    Type et = cast<MemRefType>(memref.getType()).getElementType();
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
    Value aligned =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    Value base = LLVM::IntToPtrOp::create(b, loc, gptr, toI64(aligned));
    Buffer buffer;
    buffer.ptr = LLVM::GEPOp::create(b, loc, gptr, et, base,
                                     ValueRange{toI64(meta.getOffset())});
    buffer.sizes.assign(meta.getSizes().begin(), meta.getSizes().end());
    buffer.strides.assign(meta.getStrides().begin(), meta.getStrides().end());
    return described[arg] = std::move(buffer);
  };
  // The stride of a dimension that broadcasts (size 1) is 0.
  auto broadcastStride = [&](int64_t arg, int64_t dim) {
    const Buffer &buffer = describe(arg);
    int64_t size = cast<MemRefType>(given[arg].getType()).getDimSize(dim);
    if (size == 1)
      return zero64();
    Value stride = toI64(buffer.strides[dim]);
    if (!ShapedType::isDynamic(size))
      return stride;
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        buffer.sizes[dim], index(1));
    return arith::SelectOp::create(b, loc, isOne, zero64(), stride).getResult();
  };
  // The kernel argument of each tensor the forward takes (-1: absent).
  auto argOf = [&](const KernelParam &p) -> int64_t {
    switch (p.tensor) {
    case AbiTensor::Q:
      return args.q;
    case AbiTensor::K:
      return args.k;
    case AbiTensor::V:
      return args.v;
    case AbiTensor::O:
      return args.o;
    case AbiTensor::Lse:
      return args.lse;
    case AbiTensor::Bias:
      return args.bias;
    case AbiTensor::Slopes:
      return args.slopes;
    case AbiTensor::KeyRanges:
      return args.keyRanges;
    case AbiTensor::Capture:
      return args.captures[p.capture];
    default:
      llvm_unreachable("not a tensor of the forward");
    }
  };
  // Sizes (index) from Q [B, Hq, Nq, D] and K [B, Hkv, Nk, D].
  auto sizeOf = [&](AbiSize size) -> Value {
    const Buffer &q = describe(args.q);
    const Buffer &k = describe(args.k);
    switch (size) {
    case AbiSize::Nq:
      return q.sizes[2];
    case AbiSize::Nk:
      return k.sizes[2];
    case AbiSize::Group:
      return arith::DivUIOp::create(b, loc, q.sizes[1], k.sizes[1]);
    case AbiSize::B:
      return q.sizes[0];
    case AbiSize::Hq:
      return q.sizes[1];
    case AbiSize::Hkv:
      return k.sizes[1];
    }
    llvm_unreachable("unknown size");
  };

  SmallVector<Value> operands;
  for (const KernelParam &p : abi.params) {
    switch (p.kind) {
    case KernelParam::Kind::Pointer: {
      int64_t arg = argOf(p);
      operands.push_back(arg >= 0 ? describe(arg).ptr
                                  : LLVM::ZeroOp::create(b, loc, gptr));
      break;
    }
    case KernelParam::Kind::Stride: {
      int64_t arg = argOf(p);
      Value stride;
      if (arg < 0)
        stride = zero64();
      else if (p.tensor == AbiTensor::Bias)
        stride = broadcastStride(arg, p.dim);
      else if (p.tensor == AbiTensor::Slopes)
        // The batch stride of [B, Hq] slopes; [Hq] broadcasts.
        stride = describe(arg).strides.size() == 2 ? broadcastStride(arg, 0)
                                                   : zero64();
      else
        stride = toI64(describe(arg).strides[p.dim]);
      if (p.type == MachineType::I32)
        stride = arith::TruncIOp::create(b, loc, i32, stride);
      operands.push_back(stride);
      break;
    }
    case KernelParam::Kind::Size:
      operands.push_back(arith::IndexCastOp::create(
          b, loc, p.type == MachineType::I32 ? i32 : i64, sizeOf(p.size)));
      break;
    case KernelParam::Kind::Scalar:
      // fagpu kernels carry their scale; the seed is their only scalar.
      assert(p.scalar == AbiScalar::Seed && "a scalar fagpu kernels lack");
      operands.push_back(given[args.seed]);
      break;
    case KernelParam::Kind::TensorMap:
      // The map is encoded on the host per launch by FA's launcher
      // (ParamBuffer, through the driver), which IR has no op for: the
      // launch holds its place with a null pointer.
      operands.push_back(LLVM::ZeroOp::create(
          b, loc, LLVM::LLVMPointerType::get(b.getContext())));
      break;
    }
  }
  launch.getKernelOperandsMutable().assign(operands);

  // The grid: x tiles (or a persistent kernel's items); y and z H and B,
  // folded where either exceeds 65535: (min(H B, 65535), ceil(H B /
  // 65535)).
  auto extent = [&](const GridAxis &axis) -> Value {
    switch (axis.kind) {
    case GridAxis::Kind::One:
      return index(1);
    case GridAxis::Kind::TilesNq:
    case GridAxis::Kind::TilesNk:
      return arith::CeilDivUIOp::create(
          b, loc,
          sizeOf(axis.kind == GridAxis::Kind::TilesNq ? AbiSize::Nq
                                                      : AbiSize::Nk),
          index(axis.rows));
    case GridAxis::Kind::Hq:
      return sizeOf(AbiSize::Hq);
    case GridAxis::Kind::Hkv:
      return sizeOf(AbiSize::Hkv);
    case GridAxis::Kind::B:
      return sizeOf(AbiSize::B);
    case GridAxis::Kind::Persistent:
      // One CTA an item: the SMs a launch fills are the runtime's to know.
      return arith::MulIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc,
                                arith::CeilDivUIOp::create(b, loc,
                                                           sizeOf(AbiSize::Nq),
                                                           index(axis.rows)),
                                sizeOf(AbiSize::Hq)),
          sizeOf(AbiSize::B));
    }
    llvm_unreachable("unknown grid axis");
  };
  Value heads = extent(abi.grid.y), batches = extent(abi.grid.z);
  Value limit = index(::fa::runtime::kMaxGridYZ);
  Value fits = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, heads, limit),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, batches, limit));
  Value linear = arith::MulIOp::create(b, loc, heads, batches);
  launch.getGridSizeXMutable().assign(extent(abi.grid.x));
  launch.getGridSizeYMutable().assign(arith::SelectOp::create(
      b, loc, fits, heads, arith::MinUIOp::create(b, loc, linear, limit)));
  launch.getGridSizeZMutable().assign(arith::SelectOp::create(
      b, loc, fits, batches,
      arith::CeilDivUIOp::create(b, loc, linear, limit)));
  setDynamicSharedBytes(launch, abi.sharedBytes);
}

struct ConvertFAToNVVMPass
    : public mlir::fa::impl::ConvertFAToNVVMBase<ConvertFAToNVVMPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!chip.empty() && !::fa::target::lookupGpuTarget(chip)) {
      module.emitError("convert-fa-to-nvvm: unknown chip '")
          << chip << "' (FA compiles for " << ::fa::target::listGpuTargets()
          << ")";
      return signalPassFailure();
    }
    SmallVector<AttentionGradOp> gradOps;
    SmallVector<gpu::GPUFuncOp> forwardKernels, fagpuKernels;
    bool unfused = false;
    module.walk([&](Operation *op) {
      if (auto kernel = dyn_cast<gpu::GPUFuncOp>(op)) {
        if (getOutlinedAttention(kernel))
          forwardKernels.push_back(kernel);
        else if (isFAGPUKernel(kernel))
          fagpuKernels.push_back(kernel);
      } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
        gradOps.push_back(grad);
      } else if (isa<AttentionOp>(op) &&
                 !op->getParentOfType<gpu::GPUFuncOp>()) {
        op->emitOpError("convert-fa-to-nvvm: outline fa.attention into a "
                        "kernel with fa-fuse first");
        unfused = true;
      }
    });
    if (unfused)
      return signalPassFailure();
    // A forward kernel still holding its fa.attention: one fa-tile does not
    // take (reported here with the reason), or fa-tile did not run.
    for (gpu::GPUFuncOp kernel : forwardKernels) {
      AttentionOp op = getOutlinedAttention(kernel);
      std::string reason = unsupportedForwardReason(op);
      if (!reason.empty())
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
      else
        op.emitOpError("convert-fa-to-nvvm: the forward kernel must be "
                       "written in fagpu ops by fa-tile first");
      return signalPassFailure();
    }
    if (forwardKernels.empty() && gradOps.empty() && fagpuKernels.empty())
      return;
    // The kernel module's chip, unless the option names one.
    std::string moduleChip = getKernelChip(module);
    if (!chip.empty() && !moduleChip.empty() && chip != moduleChip) {
      module.emitError("convert-fa-to-nvvm: chip=")
          << chip << ", but the kernel module targets " << moduleChip;
      return signalPassFailure();
    }
    std::string target =
        !chip.empty() ? chip : (moduleChip.empty() ? "sm_80" : moduleChip);
    const ::fa::target::GpuTarget *gpuTarget =
        ::fa::target::lookupGpuTarget(target);
    gpu::GPUModuleOp gpuModule = getOrCreateKernelModule(module, target);
    if (!gpuTarget || !gpuModule) {
      module.emitError("convert-fa-to-nvvm: unknown chip '")
          << target << "' (FA compiles for " << ::fa::target::listGpuTargets()
          << ")";
      return signalPassFailure();
    }
    OpBuilder b(gpuModule.getBodyRegion());
    if (!gpuModule.lookupSymbol("fa_smem")) {
      // 1024-byte aligned: wgmma's 128-byte swizzle is a function of the
      // address, so its 8-row groups must start at multiples of 1024.
      b.setInsertionPointToStart(gpuModule.getBody());
      LLVM::GlobalOp::create(
          b, module.getLoc(), LLVM::LLVMArrayType::get(b.getI8Type(), 0),
          /*isConstant=*/false, LLVM::Linkage::External, "fa_smem", Attribute(),
          /*alignment=*/1024, /*addrSpace=*/kShared);
    }
    static_assert(kThreads == kForwardThreads, "fa-fuse launches kThreads");
    // Kernels in the kernel-level IR, lowered op by op.
    for (gpu::GPUFuncOp kernel : fagpuKernels) {
      std::string name = kernel.getName().str();
      // fa-fuse's operands, by the role fa-tile gave each.
      KernelArgs args;
      for (auto [i, role] : llvm::enumerate(getAbiRoles(kernel))) {
        StringRef r = role;
        unsigned capture = 0;
        int64_t *slot = llvm::StringSwitch<int64_t *>(r)
                            .Case("q", &args.q)
                            .Case("k", &args.k)
                            .Case("v", &args.v)
                            .Case("o", &args.o)
                            .Case("lse", &args.lse)
                            .Case("bias", &args.bias)
                            .Case("slopes", &args.slopes)
                            .Case("seed", &args.seed)
                            .Case("key_ranges", &args.keyRanges)
                            .Default(nullptr);
        if (slot) {
          *slot = i;
        } else if (r.consume_front("capture") && !r.getAsInteger(10, capture)) {
          if (args.captures.size() <= capture)
            args.captures.resize(capture + 1, -1);
          args.captures[capture] = i;
        }
      }
      ::fa::runtime::KernelAbi abi;
      FailureOr<LLVM::LLVMFuncOp> fn = lowerFAGPUKernel(kernel, name, abi);
      if (failed(fn))
        return signalPassFailure();
      module.walk([&](gpu::LaunchFuncOp launch) {
        if (launch.getKernelModuleName() == gpuModule.getName() &&
            launch.getKernelName() == name)
          rewriteLaunch(launch, args, abi);
      });
      fn->setSymName(name);
    }
    b.setInsertionPointToEnd(gpuModule.getBody());
    for (auto [i, op] : llvm::enumerate(gradOps)) {
      std::string reason = unsupportedReason(op);
      if (!reason.empty()) {
        op.emitOpError("convert-fa-to-nvvm: ") << reason;
        return signalPassFailure();
      }
      if (failed(buildAttentionGradKernels(b, op, std::to_string(i),
                                           {bwdPrefetch, bwdAtomicDQ, gpuTarget,
                                            bwdDkDvWarps, bwdWgmma,
                                            bwdDeterministic})))
        return signalPassFailure();
    }
  }
};

} // namespace
