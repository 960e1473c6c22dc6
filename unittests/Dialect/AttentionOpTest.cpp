//===- AttentionOpTest.cpp - Building fa.attention from C++ ---------------===//

#include "fa/Dialect/FA/IR/FAOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fa;

namespace {

class AttentionOpTest : public ::testing::Test {
protected:
  AttentionOpTest() : builder(&context) {
    context.loadDialect<FADialect, func::FuncDialect, arith::ArithDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    // Collect error messages instead of printing them.
    handler = std::make_unique<ScopedDiagnosticHandler>(
        &context, [this](Diagnostic &diag) {
          errors.push_back(diag.str());
          return success();
        });
  }

  /// A function taking Q, K, V (and the optional operands) as arguments.
  func::FuncOp makeFunc(ArrayRef<Type> argTypes) {
    builder.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                     builder.getFunctionType(argTypes, {}));
    builder.setInsertionPointToStart(func.addEntryBlock());
    return func;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type et) {
    return RankedTensorType::get(shape, et);
  }

  /// Builds fa.attention with the generated builder and no variant.
  AttentionOp buildAttention(func::FuncOp func, Type outType, Type lseType) {
    Block &body = func.getBody().front();
    SmallVector<Type> results = {outType};
    if (lseType)
      results.push_back(lseType);
    return AttentionOp::create(
        builder, builder.getUnknownLoc(), results, body.getArgument(0),
        body.getArgument(1), body.getArgument(2), /*bias=*/Value(),
        /*alibi_slopes=*/Value(), /*dropout_seed=*/Value(),
        /*captures=*/ValueRange(), /*scale=*/FloatAttr(),
        /*causal=*/CausalKindAttr(),
        /*window=*/DenseI64ArrayAttr(), /*softcap=*/FloatAttr(),
        /*dropout_p=*/FloatAttr());
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::vector<std::string> errors;
};

TEST_F(AttentionOpTest, BuildsAndVerifiesGQA) {
  Type bf16 = builder.getBF16Type(), f32 = builder.getF32Type();
  int64_t dyn = ShapedType::kDynamic;
  func::FuncOp func = makeFunc({tensor({dyn, 8, dyn, 64}, bf16),
                                tensor({dyn, 2, dyn, 64}, bf16),
                                tensor({dyn, 2, dyn, 32}, bf16)});
  AttentionOp op = buildAttention(func, tensor({dyn, 8, dyn, 32}, bf16),
                                  tensor({dyn, 8, dyn}, f32));
  op.setCausalAttr(CausalKindAttr::get(&context, CausalKind::BottomRight));
  op.setWindowAttr(builder.getDenseI64ArrayAttr({128, 0}));

  EXPECT_TRUE(succeeded(verify(op)));
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(op.getHeadGroupSize(), 4);
  EXPECT_DOUBLE_EQ(op.getScaleOrDefault(), 1.0 / 8.0);
  ASSERT_TRUE(op.getLse());
  EXPECT_EQ(op.getCausalAttr().getValue(), CausalKind::BottomRight);

  op.setScaleAttr(builder.getF32FloatAttr(0.25f));
  EXPECT_DOUBLE_EQ(op.getScaleOrDefault(), 0.25);
}

TEST_F(AttentionOpTest, RejectsHeadsThatDoNotDivide) {
  Type f16 = builder.getF16Type();
  func::FuncOp func =
      makeFunc({tensor({1, 6, 16, 64}, f16), tensor({1, 4, 16, 64}, f16),
                tensor({1, 4, 16, 64}, f16)});
  AttentionOp op =
      buildAttention(func, tensor({1, 6, 16, 64}, f16), /*lseType=*/nullptr);
  EXPECT_TRUE(failed(verify(op)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "'fa.attention' op query heads (6) must be a multiple "
                       "of key/value heads (4)");
}

TEST_F(AttentionOpTest, RejectsWrongOutputType) {
  Type f16 = builder.getF16Type();
  func::FuncOp func =
      makeFunc({tensor({1, 2, 16, 64}, f16), tensor({1, 2, 16, 64}, f16),
                tensor({1, 2, 16, 64}, f16)});
  AttentionOp op = buildAttention(func, tensor({1, 2, 16, 64}, f16),
                                  tensor({1, 2, 16}, f16));
  EXPECT_TRUE(failed(verify(op)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "'fa.attention' op lse must be compatible with "
                       "'tensor<1x2x16xf32>', got 'tensor<1x2x16xf16>'");
}

TEST_F(AttentionOpTest, RejectsSoftcapThatIsNotPositive) {
  Type f32 = builder.getF32Type();
  func::FuncOp func =
      makeFunc({tensor({1, 1, 4, 8}, f32), tensor({1, 1, 4, 8}, f32),
                tensor({1, 1, 4, 8}, f32)});
  AttentionOp op =
      buildAttention(func, tensor({1, 1, 4, 8}, f32), /*lseType=*/nullptr);
  op.setSoftcapAttr(builder.getF32FloatAttr(0.0f));
  EXPECT_TRUE(failed(verify(op)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "'fa.attention' op softcap must be finite and positive, got "
            "0.000000e+00");
}

} // namespace
