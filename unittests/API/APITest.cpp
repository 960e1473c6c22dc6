//===- APITest.cpp - FA's public C++ API, used as a program would ---------===//

#include "fa/fa.h"

#include "gtest/gtest.h"

namespace {

const char *kAttention = R"mlir(
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>,
             %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>}
      : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
      -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
)mlir";

TEST(APITest, Version) { EXPECT_EQ(fa::version(), "0.1.0"); }

TEST(APITest, RunsDecompose) {
  std::string out = fa::runPipeline(kAttention, "builtin.module(fa-decompose)");
  EXPECT_EQ(out.find("fa.attention"), std::string::npos) << out;
  EXPECT_NE(out.find("linalg.generic"), std::string::npos) << out;
  EXPECT_NE(out.find("math.exp"), std::string::npos) << out;
}

TEST(APITest, ReportsVerifierErrorsWithLocation) {
  std::string bad = kAttention;
  bad.replace(bad.find("top_left>}"), 10, "top_left>, softcap = -1.0 : f32}");
  try {
    fa::runPipeline(bad, "builtin.module(fa-decompose)");
    FAIL() << "expected fa::Error";
  } catch (const fa::Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "fa::runPipeline: invalid input IR\n"
              "<input>:4:8: error: 'fa.attention' op softcap must be finite "
              "and positive, got -1.000000e+00\n");
  }
}

TEST(APITest, ReportsSyntaxErrors) {
  try {
    fa::runPipeline("func.func @f( {", "builtin.module(fa-decompose)");
    FAIL() << "expected fa::Error";
  } catch (const fa::Error &e) {
    EXPECT_EQ(std::string(e.what()), "fa::runPipeline: invalid input IR\n"
                                     "<input>:1:14: error: expected "
                                     "non-function type\n");
  }
}

TEST(APITest, ReportsUnknownPasses) {
  EXPECT_THROW(fa::runPipeline(kAttention, "builtin.module(fa-nonexistent)"),
               fa::Error);
}

} // namespace
