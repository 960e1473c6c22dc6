//===- fa.h - FA's public C++ API -------------------------------*- C++ -*-===//
//
// What programs include to use FA. It exposes no MLIR or LLVM type: link
// libfa.so, which carries its own MLIR/LLVM and exports nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef FA_FA_H
#define FA_FA_H

#include <stdexcept>
#include <string>

namespace fa {

/// The one exception type FA's API throws; what() holds the diagnostics.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// FA's version, "MAJOR.MINOR.PATCH".
std::string version();

/// Parses `mlir` (textual IR holding fa ops), verifies it, runs the textual
/// pass pipeline `pipeline` on it (e.g. "builtin.module(fa-decompose)") and
/// returns the resulting IR as text. Throws fa::Error carrying every
/// diagnostic (with its location) when parsing, verification or a pass fails.
std::string runPipeline(const std::string &mlir, const std::string &pipeline);

} // namespace fa

#endif // FA_FA_H
