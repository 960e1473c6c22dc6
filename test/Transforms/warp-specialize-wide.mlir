// fa-warp-specialize over a K/V tile wider than 128 keys (176 at D = 128,
// FlashAttention-3's; fa-fuse's defaults take 192 at D = 64, 112 at 192
// and 80 at 256): two stages of 176 x 128 K and V tiles in
// shared memory (45056 bytes each) after Q, the barriers after them, and S a
// 128 x 176 accumulator whose P feeds P V's 11 k-steps. convert-fa-to-nvvm's
// tensor maps take 176-row boxes for K and V.
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=176" -fa-tile -fa-online-softmax -fa-warp-specialize -fa-async-copy | FileCheck %s
// RUN: fa-opt %s -fa-fuse="chip=sm_90a warp-specialize=1 block-kv=176" -fa-tile -fa-online-softmax -fa-warp-specialize -convert-fa-to-nvvm | FileCheck %s --check-prefix=ABI

// The launch's dynamic shared memory.
// CHECK: arith.constant 213072 : i32
// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-SAME: fa.block_kv = 176 : i64
// CHECK: fagpu.alloc_shared {offset = 0 : i64} : !fagpu.shared<1x128x128xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_shared {offset = 32768 : i64} : !fagpu.shared<2x176x128xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_shared {offset = 122880 : i64} : !fagpu.shared<2x176x128xbf16, wgmma>
// CHECK-NEXT: fagpu.alloc_barriers {arrivals = 1 : i64, offset = 212992 : i64} : !fagpu.barriers<1>
// CHECK: fagpu.mma {{.*}} : !fagpu.shared<1x128x128xbf16, wgmma>, !fagpu.shared<2x176x128xbf16, wgmma> -> tensor<128x176xf32, #fagpu.acc<warps = 8>>
// CHECK: fagpu.mma {{.*}} : tensor<128x176xbf16, #fagpu.operand<warps = 8>>, !fagpu.shared<2x176x128xbf16, wgmma> -> tensor<128x128xf32, #fagpu.acc<warps = 8>>
// ABI: tensor_map(q, 128, 128) : tmap, tensor_map(k, 128, 176) : tmap, tensor_map(v, 128, 176) : tmap
func.func @d128(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>) -> tensor<?x8x?x128xbf16> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x?x128xbf16>
  return %o : tensor<?x8x?x128xbf16>
}
