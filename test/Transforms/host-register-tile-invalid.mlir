// RUN: fa-opt %s -fa-host-register-tile="cols=12" -verify-diagnostics
// RUN: fa-opt %s -fa-host-register-tile="rows=0" -verify-diagnostics
// RUN: fa-opt %s -fa-host-register-tile="rows=8 cols=32" -verify-diagnostics
// RUN: fa-opt %s -fa-host-register-tile="lanes=6 cols=12" -verify-diagnostics

// A register block needs rows > 0, a power-of-two vector width, a width of
// whole vectors, and at most 28 accumulator vectors (rows * cols / lanes):
// 4 x 12 (cols not a multiple of 8), 0 x 16, 8 x 32 (32 vectors) and 6 lanes
// are refused on the function, before anything is rewritten.

// expected-error-re @+1 {{fa-host-register-tile: a block of {{[0-9]+}} x {{[0-9]+}} needs rows > 0, lanes a power of two, cols a positive multiple of lanes ({{[0-9]+}}) and at most 28 accumulator vectors}}
func.func @f(%q: memref<?x64xf32>, %k: memref<?x64xf32>, %s: memref<?x?xf32>) {
  return
}
