// RUN: fa-opt %s -fa-fuse="chip=sm_90a wgmma=false" -fa-tile -fa-online-softmax | FileCheck %s

// fa-online-softmax on a GPU kernel: fa-tile's two passes over the K/V
// tiles in fagpu register tiles (log2 domain, "exp2") become one loop that
// carries (m, l, acc). Right after the marked scores: the row-max loop's
// own update of the max (reduce, times c, max with m), alpha = exp2(m - m')
// (m' = 0 while -inf), l and acc rescaled row by row (fagpu.scale_rows);
// then the row-sum loop's body as is, reading m' and the rescaled l, acc.

// CHECK-LABEL: gpu.func @fa_forward_0
// CHECK-NOT: fa.softmax_
// CHECK: %[[NINF:[a-z0-9_]+]] = arith.constant dense<0xFF800000> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[ZROWS:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[CROWS:[a-z0-9_]+]] = arith.constant dense<0.180336878> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[SCALE:[a-z0-9_]+]] = arith.constant dense<0.180336878> : tensor<128x64xf32, #fagpu.acc<warps = 4>>
// CHECK-NEXT: %[[L0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>
// CHECK-NEXT: %[[ACC0:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128x64xf32, #fagpu.acc<warps = 4>>
// One loop; K and V are copied once per tile.
// CHECK-NEXT: %[[F:[0-9]+]]:3 = scf.for %[[KV0:[a-z0-9]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[M:[a-z0-9]+]] = %[[NINF]], %[[L:[a-z0-9]+]] = %[[L0]], %[[ACC:[a-z0-9]+]] = %[[ACC0]]) -> (tensor<128xf32, #fagpu.rows<warps = 4>>, tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128x64xf32, #fagpu.acc<warps = 4>>) {
// CHECK-NEXT: fagpu.copy %{{.*}}[%{{.*}}, %{{.*}}, %[[KV0]]] bound %{{.*}} to %[[SK:[0-9]+]]
// CHECK-NEXT: fagpu.copy %{{.*}}[%{{.*}}, %{{.*}}, %[[KV0]]] bound %{{.*}} to %[[SV:[0-9]+]]
// CHECK-NEXT: %[[S:[0-9]+]] = fagpu.mma %{{.*}}, %[[SK]][%{{.*}}] {b_transposed}
// CHECK-NEXT: fagpu.tile_needs_mask
// CHECK-NEXT: %[[SM:[0-9]+]] = scf.if
// CHECK-NEXT: fagpu.mask %[[S]]
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[S]]
// CHECK-NEXT: }{{$}}
// m' = max(m, c rowmax(s)), the row-max loop's ops on this loop's scores.
// CHECK-NEXT: %[[TMAX:[0-9]+]] = fagpu.reduce_rows <max> %[[SM]]
// CHECK-NEXT: %[[TMAXC:[0-9]+]] = arith.mulf %[[TMAX]], %[[CROWS]]
// CHECK-NEXT: %[[MNEW:[0-9]+]] = arith.maximumf %[[M]], %[[TMAXC]]
// alpha = exp2(m - m'), with m' = 0 while it is -inf.
// CHECK-NEXT: %[[NINF2:[a-z0-9_]+]] = arith.constant dense<0xFF800000> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[NONE:[0-9]+]] = arith.cmpf oeq, %[[MNEW]], %[[NINF2]]
// CHECK-NEXT: %[[Z2:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[MSAFE:[0-9]+]] = arith.select %[[NONE]], %[[Z2]], %[[MNEW]]
// CHECK-NEXT: %[[DM:[0-9]+]] = arith.subf %[[M]], %[[MSAFE]]
// CHECK-NEXT: %[[ALPHA:[0-9]+]] = math.exp2 %[[DM]] : tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[LS:[0-9]+]] = fagpu.scale_rows %[[L]], %[[ALPHA]] : tensor<128xf32, #fagpu.rows<warps = 4, partial = true>>, tensor<128xf32, #fagpu.rows<warps = 4>>
// CHECK-NEXT: %[[ACCS:[0-9]+]] = fagpu.scale_rows %[[ACC]], %[[ALPHA]] : tensor<128x64xf32, #fagpu.acc<warps = 4>>, tensor<128xf32, #fagpu.rows<warps = 4>>
// The row-sum loop's body, reading m' and the rescaled state.
// CHECK-NEXT: %[[NONE2:[0-9]+]] = arith.cmpf oeq, %[[MNEW]], %[[NINF]]
// CHECK-NEXT: %[[MSAFE2:[0-9]+]] = arith.select %[[NONE2]], %[[ZROWS]], %[[MNEW]]
// CHECK-NEXT: %[[MB:[0-9]+]] = fagpu.broadcast_rows %[[MSAFE2]]
// CHECK-NEXT: %[[NEGM:[0-9]+]] = arith.negf %[[MB]]
// CHECK-NEXT: %[[E:[0-9]+]] = math.fma %[[SM]], %[[SCALE]], %[[NEGM]]
// CHECK-NEXT: %[[P:[0-9]+]] = math.exp2 %[[E]]
// CHECK-NEXT: %[[LNEW:[0-9]+]] = fagpu.update_row_sum %[[LS]], %[[P]]
// CHECK-NEXT: %[[PA:[0-9]+]] = fagpu.to_operand %[[P]]
// CHECK-NEXT: %[[ACCNEW:[0-9]+]] = fagpu.mma %[[PA]], %[[SV]][%{{.*}}] acc %[[ACCS]]
// CHECK-NEXT: scf.yield %[[MNEW]], %[[LNEW]], %[[ACCNEW]]
// CHECK-NEXT: }{{$}}
// The epilogue reads the fused loop's results: l, acc, and m for the lse.
// CHECK: fagpu.reduce_rows <sum> %[[F]]#1
// CHECK: arith.mulf %[[F]]#2
// CHECK: arith.addf %[[F]]#0
// CHECK: gpu.return
func.func @causal(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
