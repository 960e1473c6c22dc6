// RUN: split-file %s %t
// RUN: fa-opt %t/block-q.mlir -fa-fuse=block-q=96 -verify-diagnostics
// RUN: fa-opt %t/block-kv.mlir -fa-fuse=block-kv=16 -verify-diagnostics
// Nothing is outlined when a tile is refused.
// RUN: not fa-opt %t/block-q.mlir -fa-fuse=block-q=96 2>/dev/null | count 0

//--- block-q.mlir
func.func @f(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-q must be 64 or 128 (got 96)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

//--- block-kv.mlir
func.func @f(%q: tensor<1x1x8x128xf16>) -> tensor<1x1x8x128xf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-kv must be 32, 64 or 128 (got 16)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16> -> tensor<1x1x8x128xf16>
  return %o : tensor<1x1x8x128xf16>
}
