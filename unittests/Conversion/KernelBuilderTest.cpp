//===- KernelBuilderTest.cpp - KernelBuilder's arithmetic on the host -----===//
//
// KernelBuilder::exp2Fma (fwd-exp2-fma: 2^x on the FMA pipe instead of the
// MUFU's ex2) and accurateTanh with its reciprocal on the FMA pipe
// (fwd-tanh-fma) are f32 and integer arithmetic only, but for the tanh's
// exp2: built into a function, lowered to LLVM and run on the host, they
// are checked against std::exp2 and std::tanh over their ranges and at
// their edges (-inf, NaN, the exponent's underflow).
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
#include <functional>
#include <limits>

using namespace mlir;

namespace {

using FloatFn = float (*)(float);

/// `build`'s value of the argument as a function `float fn(float)`,
/// compiled for the host.
class HostFnTest : public ::testing::Test {
protected:
  using Build =
      std::function<Value(mlir::fa::nvvm::KernelBuilder &, OpBuilder &, Value)>;

  FloatFn compile(const Build &build) {
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
    auto fn =
        func::FuncOp::create(b, loc, "fn", b.getFunctionType({f32}, {f32}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    mlir::fa::nvvm::KernelBuilder kb(b, loc, f32, 0);
    func::ReturnOp::create(b, loc, build(kb, b, entry->getArgument(0)));

    PassManager pm(&ctx);
    pm.addPass(createConvertToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    if (failed(pm.run(*module))) {
      ADD_FAILURE() << "lowering to LLVM failed";
      return nullptr;
    }
    auto created = ExecutionEngine::create(*module);
    if (!created) {
      ADD_FAILURE() << llvm::toString(created.takeError());
      return nullptr;
    }
    engine = std::move(*created);
    auto address = engine->lookup("fn");
    if (!address) {
      ADD_FAILURE() << llvm::toString(address.takeError());
      return nullptr;
    }
    return reinterpret_cast<FloatFn>(*address);
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
};

class Exp2FmaTest : public HostFnTest {
protected:
  void SetUp() override {
    exp2fma =
        compile([](auto &kb, OpBuilder &, Value x) { return kb.exp2Fma(x); });
    ASSERT_NE(exp2fma, nullptr);
  }
  FloatFn exp2fma = nullptr;
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

/// scale * tanh(c * y) with the reciprocal on the FMA pipe, as a softcap's
/// map holds it (c folded into the exponent's multiply; its sign and the
/// scale's decide the result's sign).
class TanhFmaTest : public HostFnTest {
protected:
  FloatFn tanhFma(double c, double scale) {
    return compile([=](auto &kb, OpBuilder &b, Value y) {
      Value x = c == 1.0 ? y : kb.fmul(y, kb.cf(c));
      return kb.accurateTanh(x, scale, /*rcpOnFma=*/true);
    });
  }
};

// Within 2^-21 of tanh absolutely (the MUFU form's bound; a softmax sees
// cap * tanh, so tanh's relative error near 0 does not matter), from the
// quadratic's 2^-6.6 through two Newton steps, over the range where tanh
// is not yet +-1 in f32 and beyond.
TEST_F(TanhFmaTest, WithinTwoToTheMinus21) {
  FloatFn fn = tanhFma(1.0, 1.0);
  ASSERT_NE(fn, nullptr);
  double worst = 0;
  for (int i = 0; i <= 2000000; ++i) {
    float x = static_cast<float>(-20.0 + i * 40.0 / 2000000);
    worst = std::max(worst, std::abs(fn(x) - std::tanh(double(x))));
  }
  EXPECT_LE(worst, std::ldexp(1.0, -21)) << "worst absolute error " << worst;
}

// The scale in the last fma and the sign from x, including a negative
// multiplier of the argument and a negative scale (a score_mod's).
TEST_F(TanhFmaTest, ScaleAndSign) {
  for (auto [c, scale] :
       {std::pair{0.125 / 30, 30 * M_LOG2E}, std::pair{-0.5, 3.0},
        std::pair{0.1, -10.0}, std::pair{-0.25, -2.0}}) {
    FloatFn fn = tanhFma(c, scale);
    ASSERT_NE(fn, nullptr);
    for (float y : {-1000.0f, -37.5f, -3.0f, -0.01f, 0.02f, 1.0f, 9.0f, 250.0f,
                    5000.0f}) {
      double want = scale * std::tanh(c * double(y));
      EXPECT_NEAR(fn(y), want, std::abs(scale) * std::ldexp(1.0, -21))
          << "c " << c << " scale " << scale << " y " << y;
    }
  }
}

// +-inf give +-1 (e^(-2|x|) is 0), 0 gives 0, NaN stays NaN.
TEST_F(TanhFmaTest, Edges) {
  FloatFn fn = tanhFma(1.0, 1.0);
  ASSERT_NE(fn, nullptr);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fn(inf), 1.0f);
  EXPECT_EQ(fn(-inf), -1.0f);
  EXPECT_LE(std::abs(fn(0.0f)), std::ldexp(1.0f, -23));
  EXPECT_TRUE(std::isnan(fn(std::numeric_limits<float>::quiet_NaN())));
}

} // namespace
