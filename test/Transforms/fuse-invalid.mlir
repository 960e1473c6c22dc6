// RUN: split-file %s %t
// RUN: fa-opt %t/block-q.mlir -fa-fuse=block-q=96 -verify-diagnostics
// RUN: fa-opt %t/block-kv.mlir -fa-fuse=block-kv=16 -verify-diagnostics
// Wider K/V tiles only for a warp-specialized wgmma kernel (sm_90a) of 128
// query rows, in whole 16-row slabs from 80 to 224 there.
// RUN: fa-opt %t/block-kv-sm80.mlir -fa-fuse="chip=sm_80 block-kv=176" -verify-diagnostics
// RUN: fa-opt %t/block-kv-sm90.mlir -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=120" -verify-diagnostics
// RUN: fa-opt %t/block-kv-sm90-q64.mlir -fa-fuse="chip=sm_90a warp-specialize=1 block-q=64 block-kv=176" -verify-diagnostics
// RUN: fa-opt %t/block-kv-sm90-big.mlir -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=256" -verify-diagnostics
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

//--- block-kv-sm80.mlir
func.func @f(%q: tensor<1x1x8x128xf16>) -> tensor<1x1x8x128xf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-kv must be 32, 64 or 128 (got 176)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16> -> tensor<1x1x8x128xf16>
  return %o : tensor<1x1x8x128xf16>
}

//--- block-kv-sm90.mlir
func.func @f(%q: tensor<1x1x8x128xf16>) -> tensor<1x1x8x128xf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-kv must be 32, 64 or 128, or with block-q = 128 a multiple of 16 from 80 to 224 (got 120)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16>, tensor<1x1x8x128xf16> -> tensor<1x1x8x128xf16>
  return %o : tensor<1x1x8x128xf16>
}

//--- block-kv-sm90-big.mlir
func.func @f(%q: tensor<1x1x8x64xf16>) -> tensor<1x1x8x64xf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-kv must be 32, 64 or 128, or with block-q = 128 a multiple of 16 from 80 to 224 (got 256)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return %o : tensor<1x1x8x64xf16>
}

//--- block-kv-sm90-q64.mlir
func.func @f(%q: tensor<1x1x8x64xf16>) -> tensor<1x1x8x64xf16> {
  // expected-error @+1 {{'fa.attention' op fa-fuse: block-kv must be 32, 64 or 128, or with block-q = 128 a multiple of 16 from 80 to 224 (got 176)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16>, tensor<1x1x8x64xf16> -> tensor<1x1x8x64xf16>
  return %o : tensor<1x1x8x64xf16>
}
