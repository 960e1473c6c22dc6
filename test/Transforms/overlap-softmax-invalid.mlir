// A wgmma kernel whose K/V copies are still fa-tile's synchronous ones:
// there is no ring to skew.
// RUN: not fa-opt %s -fa-fuse=chip=sm_90a -fa-tile -fa-online-softmax -fa-overlap-softmax 2>&1 | FileCheck %s --check-prefix=SYNC
// SYNC: error: 'gpu.func' op fa-overlap-softmax: the K/V copies are synchronous (run fa-async-copy first)
func.func @f(%q: tensor<1x1x8x128xbf16>) -> tensor<1x1x8x128xbf16> {
  %o = fa.attention %q, %q, %q : tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16>, tensor<1x1x8x128xbf16> -> tensor<1x1x8x128xbf16>
  return %o : tensor<1x1x8x128xbf16>
}
