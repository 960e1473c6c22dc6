// RUN: split-file %s %t
// RUN: fa-opt %t/stages.mlir -fa-fuse -fa-tile -fa-online-softmax -fa-async-copy=stages=5 -verify-diagnostics
// RUN: fa-opt %t/shared.mlir -fa-fuse=chip=sm_80 -fa-tile -fa-online-softmax -fa-async-copy=stages=3 -verify-diagnostics
// A kernel of fa-tile's whose tile attributes were dropped.
// RUN: fa-opt %t/stages.mlir -fa-fuse -fa-tile -fa-online-softmax | sed -e 's/fa.block_kv = 64 : i64, //' | not fa-opt -fa-async-copy 2>&1 | FileCheck %s --check-prefix=UNTILED
// UNTILED: error: 'gpu.func' op fa-async-copy: the kernel has no 'fa.block_q' and 'fa.block_kv' (outline it with fa-fuse)
// A kernel whose softmax is still fa-tile's two passes: the ring is built
// on the one loop over K/V tiles that fa-online-softmax leaves.
// RUN: not fa-opt %t/stages.mlir -fa-fuse -fa-tile -fa-async-copy 2>&1 | FileCheck %s --check-prefix=TWOPASS
// TWOPASS: error: 'gpu.func' op fa-async-copy: the kernel still has fa-tile's two softmax loops (run fa-online-softmax first)

//--- stages.mlir
func.func @f(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'gpu.func' op fa-async-copy: stages must be 1 to 4 (got 5)}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

//--- shared.mlir
// Three stages of D = 256 fit sm_90a (227 KB a CTA), not sm_80 (163 KB).
func.func @f(%q: tensor<1x1x8x256xbf16>) -> tensor<1x1x8x256xbf16> {
  // expected-error @+1 {{'gpu.func' op fa-async-copy: 3 K/V stages of a 64 x 64 tile at D = 256 need 229376 bytes of shared memory; sm_80 gives a CTA 166912}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16>, tensor<1x1x8x256xbf16> -> tensor<1x1x8x256xbf16>
  return %o : tensor<1x1x8x256xbf16>
}
