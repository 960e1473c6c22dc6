//===- FADialect.h - FA dialect ---------------------------------*- C++ -*-===//

#ifndef FA_DIALECT_FA_IR_FADIALECT_H
#define FA_DIALECT_FA_IR_FADIALECT_H

#include "mlir/IR/Dialect.h"

#include "fa/Dialect/FA/IR/FAOpsDialect.h.inc"

#endif // FA_DIALECT_FA_IR_FADIALECT_H
