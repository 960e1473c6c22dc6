//===- KernelBuilderTest.cpp - KernelBuilder's arithmetic on the host -----===//
//
// KernelBuilder::exp2Fma (fwd-exp2-fma: 2^x on the FMA pipe instead of the
// MUFU's ex2) is f32 and integer arithmetic only: built into a function,
// lowered to LLVM and run on the host, it is checked against std::exp2
// over P's exponents and at their edges (-inf is 0, NaN stays NaN, the
// exponent's underflow).
//
//===----------------------------------------------------------------------===//

#include "../../lib/Conversion/FAToNVVM/KernelBuilder.h"
#include "fa/Compiler/Registration.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace mlir;

namespace {

using Exp2Fn = float (*)(float);

/// exp2Fma in a function `float exp2fma(float)`, compiled for the host.
class Exp2FmaTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    DialectRegistry registry;
    mlir::fa::registerDialects(registry);
    registry.insert<func::FuncDialect>();
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    ctx.appendDialectRegistry(registry);
    ctx.loadAllAvailableDialects();

    OpBuilder b(&ctx);
    Location loc = b.getUnknownLoc();
    module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    Type f32 = b.getF32Type();
    auto fn = func::FuncOp::create(b, loc, "exp2fma",
                                   b.getFunctionType({f32}, {f32}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    mlir::fa::nvvm::KernelBuilder kb(b, loc, f32, 0);
    func::ReturnOp::create(b, loc, kb.exp2Fma(entry->getArgument(0)));

    PassManager pm(&ctx);
    pm.addPass(createConvertToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    ASSERT_TRUE(succeeded(pm.run(*module)));
    auto created = ExecutionEngine::create(*module);
    ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
    engine = std::move(*created);
    auto address = engine->lookup("exp2fma");
    ASSERT_TRUE(bool(address)) << llvm::toString(address.takeError());
    exp2fma = reinterpret_cast<Exp2Fn>(*address);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
  Exp2Fn exp2fma = nullptr;
};

// Within 2^-22 relatively (ex2.approx's bound) wherever 2^x is a normal
// f32: P's exponents, from the offset's 78 binades below to softcap's 43
// above, and the rest of the range.
TEST_F(Exp2FmaTest, WithinEx2sErrorOverTheNormalRange) {
  double worst = 0;
  for (int i = 0; i <= 2000000; ++i) {
    float x = static_cast<float>(-125.9 + i * (127.8 + 125.9) / 2000000);
    double want = std::exp2(static_cast<double>(x));
    double got = exp2fma(x);
    worst = std::max(worst, std::abs(got - want) / want);
  }
  EXPECT_LE(worst, std::ldexp(1.0, -22)) << "worst relative error " << worst;
}

// Exact where 2^x is: integers, and 0 (a score at the offset is 1).
TEST_F(Exp2FmaTest, ExactAtIntegers) {
  for (int j = -126; j <= 127; ++j)
    EXPECT_EQ(exp2fma(static_cast<float>(j)), std::ldexp(1.0f, j)) << j;
}

// A masked score (-inf) and anything below the exponent range give 0, the
// end of the range a denormal or 0 (ex2.approx.ftz flushes it), never a
// wrapped exponent (a negative or huge value); NaN stays NaN.
TEST_F(Exp2FmaTest, EdgesOfTheRange) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp2fma(-inf), 0.0f);
  EXPECT_EQ(exp2fma(-1000.0f), 0.0f);
  EXPECT_EQ(exp2fma(-127.5f), 0.0f);
  EXPECT_EQ(exp2fma(-128.0f), 0.0f);
  for (float x : {-127.4f, -127.0f, -126.6f, -126.5f}) {
    float got = exp2fma(x);
    EXPECT_GE(got, 0.0f) << x;
    EXPECT_LT(got, std::ldexp(1.0f, -126)) << x;
  }
  EXPECT_TRUE(std::isnan(exp2fma(std::numeric_limits<float>::quiet_NaN())));
}

} // namespace
