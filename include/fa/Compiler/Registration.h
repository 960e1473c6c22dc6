//===- Registration.h - Register FA's dialects and passes -------*- C++ -*-===//

#ifndef FA_COMPILER_REGISTRATION_H
#define FA_COMPILER_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::fa {

/// Adds the fa dialect and the upstream dialects FA's pipelines produce.
void registerDialects(DialectRegistry &registry);

/// Registers every fa-* pass and pipeline, and the upstream passes the
/// pipelines are made of, with the global pass registry.
void registerPasses();

} // namespace mlir::fa

#endif // FA_COMPILER_REGISTRATION_H
