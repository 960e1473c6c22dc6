// RUN: fa-opt %s -fa-decompose -split-input-file | FileCheck %s

// The whole reference for MHA (G = 1), static shapes, with the lse.

// CHECK-DAG: #[[QK_Q:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[QK_K:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-DAG: #[[QK_S:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[PV_V:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>
// CHECK-DAG: #[[ALL5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[ROW5:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ALL4:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @mha
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x4x16x32xf16>, %[[K:[^:]+]]: tensor<2x4x24x32xf16>, %[[V:[^:]+]]: tensor<2x4x24x32xf16>)
// CHECK: %[[QG:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 4, 1, 16, 32] : tensor<2x4x16x32xf16> into tensor<2x4x1x16x32xf16>
// CHECK: %[[S0:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<2x4x1x16x24xf32>)
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[QK_Q]], #[[QK_K]], #[[QK_S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%[[QG]], %[[K]] : tensor<2x4x1x16x32xf16>, tensor<2x4x24x32xf16>) outs(%[[S0]] : tensor<2x4x1x16x24xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f16, %[[B:.+]]: f16, %[[ACC:.+]]: f32):
// CHECK-NEXT:   %[[AE:.+]] = arith.extf %[[A]] : f16 to f32
// CHECK-NEXT:   %[[BE:.+]] = arith.extf %[[B]] : f16 to f32
// CHECK-NEXT:   %[[P:.+]] = arith.mulf %[[AE]], %[[BE]] : f32
// CHECK-NEXT:   %[[SUM:.+]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT:   linalg.yield %[[SUM]] : f32
// Default scale 1/sqrt(32), and nothing else: no masks, no positions.
// CHECK: %[[SS:.+]] = linalg.generic {indexing_maps = [#[[ALL5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%[[S]] : tensor<2x4x1x16x24xf32>)
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[SC:.+]] = arith.constant 0.176776692 : f32
// CHECK-NEXT:   %[[XS:.+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[XS]] : f32
// Row max from -inf.
// CHECK: %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[M0:.+]] = linalg.fill ins(%[[NINF]] : f32) outs(%{{.+}} : tensor<2x4x1x16xf32>)
// CHECK-NEXT: %[[M:.+]] = linalg.generic {indexing_maps = [#[[ALL5]], #[[ROW5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[SS]] : tensor<2x4x1x16x24xf32>) outs(%[[M0]] : tensor<2x4x1x16xf32>)
// CHECK: arith.maximumf
// p = exp(s - m), with m = -inf (fully masked row) replaced by 0.
// CHECK: %[[PR:.+]] = linalg.generic {indexing_maps = [#[[ROW5]], #[[ALL5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[M]] : tensor<2x4x1x16xf32>) outs(%[[SS]] : tensor<2x4x1x16x24xf32>)
// CHECK-NEXT: ^bb0(%[[MI:.+]]: f32, %[[SI:.+]]: f32):
// CHECK-NEXT:   %[[NI:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[ISM:.+]] = arith.cmpf oeq, %[[MI]], %[[NI]] : f32
// CHECK-NEXT:   %[[Z:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[MS:.+]] = arith.select %[[ISM]], %[[Z]], %[[MI]] : f32
// CHECK-NEXT:   %[[D:.+]] = arith.subf %[[SI]], %[[MS]] : f32
// CHECK-NEXT:   %[[E:.+]] = math.exp %[[D]] : f32
// CHECK-NEXT:   linalg.yield %[[E]] : f32
// Row sum from 0.
// CHECK: %[[L:.+]] = linalg.generic {indexing_maps = [#[[ALL5]], #[[ROW5]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[PR]] : tensor<2x4x1x16x24xf32>)
// CHECK: arith.addf
// P V over (b, h, g, i, e, j).
// CHECK: %[[ACCO:.+]] = linalg.generic {indexing_maps = [#[[QK_Q]], #[[PV_V]], #[[QK_S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[PR]], %[[V]] : tensor<2x4x1x16x24xf32>, tensor<2x4x24x32xf16>) outs(%{{.+}} : tensor<2x4x1x16x32xf32>)
// O = acc / l, 0 where l = 0, in the element type of Q.
// CHECK: %[[OG:.+]] = linalg.generic {indexing_maps = [#[[ALL5]], #[[ROW5]], #[[ALL5]]], {{.*}} ins(%[[ACCO]], %[[L]] : tensor<2x4x1x16x32xf32>, tensor<2x4x1x16xf32>) outs(%{{.+}} : tensor<2x4x1x16x32xf16>)
// CHECK-NEXT: ^bb0(%[[AI:.+]]: f32, %[[LI:.+]]: f32, %{{.+}}: f16):
// CHECK-NEXT:   %[[Z2:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[EMPTY:.+]] = arith.cmpf oeq, %[[LI]], %[[Z2]] : f32
// CHECK-NEXT:   %[[QT:.+]] = arith.divf %[[AI]], %[[LI]] : f32
// CHECK-NEXT:   %[[SEL:.+]] = arith.select %[[EMPTY]], %[[Z2]], %[[QT]] : f32
// CHECK-NEXT:   %[[TR:.+]] = arith.truncf %[[SEL]] : f32 to f16
// CHECK-NEXT:   linalg.yield %[[TR]] : f16
// CHECK: %[[O:.+]] = tensor.collapse_shape %[[OG]] {{\[}}[0], [1, 2], [3], [4]] : tensor<2x4x1x16x32xf16> into tensor<2x4x16x32xf16>
// lse = m + log(l).
// CHECK: %[[LSEG:.+]] = linalg.generic {indexing_maps = [#[[ALL4]], #[[ALL4]], #[[ALL4]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[M]], %[[L]] : tensor<2x4x1x16xf32>, tensor<2x4x1x16xf32>)
// CHECK-NEXT: ^bb0(%[[MM:.+]]: f32, %[[LL:.+]]: f32, %{{.+}}: f32):
// CHECK-NEXT:   %[[LOG:.+]] = math.log %[[LL]] : f32
// CHECK-NEXT:   %[[LSEV:.+]] = arith.addf %[[MM]], %[[LOG]] : f32
// CHECK-NEXT:   linalg.yield %[[LSEV]] : f32
// CHECK: %[[LSE:.+]] = tensor.collapse_shape %[[LSEG]] {{\[}}[0], [1, 2], [3]] : tensor<2x4x1x16xf32> into tensor<2x4x16xf32>
// CHECK: return %[[O]], %[[LSE]]
// CHECK-NOT: fa.attention
func.func @mha(%q: tensor<2x4x16x32xf16>, %k: tensor<2x4x24x32xf16>, %v: tensor<2x4x24x32xf16>) -> (tensor<2x4x16x32xf16>, tensor<2x4x16xf32>) {
  %o, %lse = fa.attention %q, %k, %v : tensor<2x4x16x32xf16>, tensor<2x4x24x32xf16>, tensor<2x4x24x32xf16> -> tensor<2x4x16x32xf16>, tensor<2x4x16xf32>
  return %o, %lse : tensor<2x4x16x32xf16>, tensor<2x4x16xf32>
}

// -----

// GQA with dynamic batch and lengths: Q heads regrouped as [Hkv = 2, G = 4];
// no lse requested, so none is computed. f32 needs no casts.

// CHECK-LABEL: func.func @gqa_dynamic
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x?x64xf32>, %[[K:[^:]+]]: tensor<?x2x?x64xf32>, %[[V:[^:]+]]: tensor<?x2x?x64xf32>)
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[Q]], %[[C0]] : tensor<?x8x?x64xf32>
// CHECK-DAG: %[[NQ:.+]] = tensor.dim %[[Q]], %[[C2]] : tensor<?x8x?x64xf32>
// CHECK-DAG: %[[NK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<?x2x?x64xf32>
// CHECK: %[[QG:.+]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [%[[B]], 2, 4, %[[NQ]], 64] : tensor<?x8x?x64xf32> into tensor<?x2x4x?x64xf32>
// CHECK: %[[E:.+]] = tensor.empty(%[[B]], %[[NQ]], %[[NK]]) : tensor<?x2x4x?x?xf32>
// CHECK: linalg.generic {{.*}} ins(%[[QG]], %[[K]] : tensor<?x2x4x?x64xf32>, tensor<?x2x?x64xf32>)
// CHECK-NEXT: ^bb0(%[[A:.+]]: f32, %[[BB:.+]]: f32, %[[ACC:.+]]: f32):
// CHECK-NEXT:   %[[P:.+]] = arith.mulf %[[A]], %[[BB]] : f32
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: %[[O:.+]] = tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x4x?x64xf32> into tensor<?x8x?x64xf32>
// CHECK-NOT: math.log
// CHECK: return %[[O]] : tensor<?x8x?x64xf32>
func.func @gqa_dynamic(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = fa.attention %q, %k, %v : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32> -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// Dynamic head counts: G = Hq / Hkv is computed at run time.

// CHECK-LABEL: func.func @dynamic_heads
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x?x8x16xbf16>, %[[K:[^:]+]]: tensor<1x?x8x16xbf16>
// CHECK-DAG: %[[HKV:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<1x?x8x16xbf16>
// CHECK-DAG: %[[HQ:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<1x?x8x16xbf16>
// CHECK: %[[G:.+]] = arith.divui %[[HQ]], %[[HKV]] : index
// CHECK: tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, %[[HKV]], %[[G]], 8, 16] : tensor<1x?x8x16xbf16> into tensor<1x?x?x8x16xbf16>
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] : tensor<1x?x?x8x16xbf16> into tensor<1x?x8x16xbf16>
func.func @dynamic_heads(%q: tensor<1x?x8x16xbf16>, %k: tensor<1x?x8x16xbf16>, %v: tensor<1x?x8x16xbf16>) -> tensor<1x?x8x16xbf16> {
  %o = fa.attention %q, %k, %v : tensor<1x?x8x16xbf16>, tensor<1x?x8x16xbf16>, tensor<1x?x8x16xbf16> -> tensor<1x?x8x16xbf16>
  return %o : tensor<1x?x8x16xbf16>
}

// -----

// Causal, top-left: keep j <= i. An explicit scale replaces 1/sqrt(D).

// CHECK-LABEL: func.func @causal_top_left
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%{{.+}} : tensor<1x1x1x8x8xf32>)
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[I:.+]] = linalg.index 3 : index
// CHECK-NEXT:   %[[J:.+]] = linalg.index 4 : index
// CHECK-NEXT:   %[[SC:.+]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]], %[[SC]] fastmath<contract> : f32
// CHECK-NEXT:   %[[KEEP:.+]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[R:.+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @causal_top_left(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>, scale = 0.5 : f32} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// Causal, bottom-right: keep j <= i + Nk - Nq, with Nk - Nq at run time.

// CHECK-LABEL: func.func @causal_bottom_right
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<1x1x?x4xf32>, %[[K:[^:]+]]: tensor<1x1x?x4xf32>
// CHECK-DAG: %[[NQ:.+]] = tensor.dim %[[Q]], %{{.+}} : tensor<1x1x?x4xf32>
// CHECK-DAG: %[[NK:.+]] = tensor.dim %[[K]], %{{.+}} : tensor<1x1x?x4xf32>
// CHECK: %[[OFF:.+]] = arith.subi %[[NK]], %[[NQ]] : index
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[I:.+]] = linalg.index 3 : index
// CHECK-NEXT:   %[[J:.+]] = linalg.index 4 : index
// CHECK-NEXT:   %[[IA:.+]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[KEEP:.+]] = arith.cmpi sle, %[[J]], %[[IA]] : index
// CHECK-NEXT:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[R:.+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @causal_bottom_right(%q: tensor<1x1x?x4xf32>, %k: tensor<1x1x?x4xf32>, %v: tensor<1x1x?x4xf32>) -> tensor<1x1x?x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>} : tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32>, tensor<1x1x?x4xf32> -> tensor<1x1x?x4xf32>
  return %o : tensor<1x1x?x4xf32>
}

// -----

// Sliding window [3, 1] on the bottom-right diagonal:
// keep i' - 3 <= j <= i' + 1 with i' = i + Nk - Nq.

// CHECK-LABEL: func.func @window
// CHECK: %[[OFF:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[I:.+]] = linalg.index 3 : index
// CHECK-NEXT:   %[[J:.+]] = linalg.index 4 : index
// CHECK-NEXT:   %[[IA:.+]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[LEFT:.+]] = arith.constant 3 : index
// CHECK-NEXT:   %[[LO:.+]] = arith.subi %[[IA]], %[[LEFT]] : index
// CHECK-NEXT:   %[[K1:.+]] = arith.cmpi sge, %[[J]], %[[LO]] : index
// CHECK-NEXT:   %[[RIGHT:.+]] = arith.constant 1 : index
// CHECK-NEXT:   %[[HI:.+]] = arith.addi %[[IA]], %[[RIGHT]] : index
// CHECK-NEXT:   %[[K2:.+]] = arith.cmpi sle, %[[J]], %[[HI]] : index
// CHECK-NEXT:   %[[KEEP:.+]] = arith.andi %[[K1]], %[[K2]] : i1
// CHECK-NEXT:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[R:.+]] = arith.select %[[KEEP]], %[[S]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @window(%q: tensor<1x1x6x4xf32>, %k: tensor<1x1x9x4xf32>, %v: tensor<1x1x9x4xf32>) -> tensor<1x1x6x4xf32> {
  %o = fa.attention %q, %k, %v {window = array<i64: 3, 1>} : tensor<1x1x6x4xf32>, tensor<1x1x9x4xf32>, tensor<1x1x9x4xf32> -> tensor<1x1x6x4xf32>
  return %o : tensor<1x1x6x4xf32>
}

// -----

// Softcap after the scale: s = 30 * tanh(s / 30), the scale and 1 / 30 in
// one multiply.

// CHECK-LABEL: func.func @softcap
// CHECK: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[CAP:.+]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT:   %[[SC:.+]] = arith.constant 0.0166666675 : f32
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]], %[[SC]] : f32
// CHECK-NEXT:   %[[T:.+]] = math.tanh %[[S]] : f32
// CHECK-NEXT:   %[[R:.+]] = arith.mulf %[[CAP]], %[[T]] : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @softcap(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = fa.attention %q, %k, %v {softcap = 30.0 : f32} : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}

// -----

// ALiBi with per-head slopes [Hq] regrouped as [Hkv, G]:
// s -= slope[h] * |i + Nk - Nq - j|.

// CHECK-DAG: #[[SLOPE:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2)>
// CHECK-LABEL: func.func @alibi
// CHECK-SAME: %[[SL:[^:]+]]: tensor<4xf32>
// CHECK: %[[SLG:.+]] = tensor.expand_shape %[[SL]] {{\[}}[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
// CHECK: %[[OFF:.+]] = arith.subi
// CHECK: linalg.generic {indexing_maps = [#[[SLOPE]], #{{.+}}], {{.*}} ins(%[[SLG]] : tensor<2x2xf32>)
// CHECK-NEXT: ^bb0(%[[SLOPEV:.+]]: f32, %[[X:.+]]: f32):
// CHECK-NEXT:   %[[I:.+]] = linalg.index 3 : index
// CHECK-NEXT:   %[[J:.+]] = linalg.index 4 : index
// CHECK-NEXT:   %[[IA:.+]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[DIST:.+]] = arith.subi %[[IA]], %[[J]] : index
// CHECK-NEXT:   %[[D32:.+]] = arith.index_cast %[[DIST]] : index to i32
// CHECK-NEXT:   %[[DF:.+]] = arith.sitofp %[[D32]] : i32 to f32
// CHECK-NEXT:   %[[ABS:.+]] = math.absf %[[DF]] : f32
// CHECK-NEXT:   %[[PEN:.+]] = arith.mulf %[[SLOPEV]], %[[ABS]] fastmath<contract> : f32
// CHECK-NEXT:   %[[R:.+]] = arith.subf %[[S]], %[[PEN]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @alibi(%q: tensor<1x4x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x2x8x4xf32>, %slopes: tensor<4xf32>) -> tensor<1x4x8x4xf32> {
  %o = fa.attention %q, %k, %v alibi_slopes(%slopes : tensor<4xf32>) : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  return %o : tensor<1x4x8x4xf32>
}

// -----

// ALiBi slopes per batch and head [B, Hq].

// CHECK-DAG: #[[SLOPE:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @alibi_per_batch
// CHECK: tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2]] output_shape [3, 2, 2] : tensor<3x4xf32> into tensor<3x2x2xf32>
// CHECK: linalg.generic {indexing_maps = [#[[SLOPE]], #{{.+}}]
func.func @alibi_per_batch(%q: tensor<3x4x8x4xf32>, %k: tensor<3x2x8x4xf32>, %v: tensor<3x2x8x4xf32>, %slopes: tensor<3x4xf32>) -> tensor<3x4x8x4xf32> {
  %o = fa.attention %q, %k, %v alibi_slopes(%slopes : tensor<3x4xf32>) : tensor<3x4x8x4xf32>, tensor<3x2x8x4xf32>, tensor<3x2x8x4xf32> -> tensor<3x4x8x4xf32>
  return %o : tensor<3x4x8x4xf32>
}

// -----

// An additive bias broadcast over batch and heads ([1, 1, Nq, Nk]) reads
// constant indices on the broadcast dims; a bf16 bias is extended to f32.

// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (0, 0, 0, d3, d4)>
// CHECK-LABEL: func.func @bias_broadcast
// CHECK-SAME: %[[BI:[^:]+]]: tensor<1x1x8x8xbf16>
// CHECK: %[[BG:.+]] = tensor.expand_shape %[[BI]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 1, 1, 8, 8] : tensor<1x1x8x8xbf16> into tensor<1x1x1x8x8xbf16>
// CHECK: linalg.generic {indexing_maps = [#[[BIAS]], #{{.+}}], {{.*}} ins(%[[BG]] : tensor<1x1x1x8x8xbf16>)
// CHECK-NEXT: ^bb0(%[[BV:.+]]: bf16, %[[X:.+]]: f32):
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[BE:.+]] = arith.extf %[[BV]] : bf16 to f32
// CHECK-NEXT:   %[[R:.+]] = arith.addf %[[S]], %[[BE]] fastmath<contract> : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @bias_broadcast(%q: tensor<2x4x8x4xbf16>, %k: tensor<2x4x8x4xbf16>, %v: tensor<2x4x8x4xbf16>, %bias: tensor<1x1x8x8xbf16>) -> tensor<2x4x8x4xbf16> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<1x1x8x8xbf16>) : tensor<2x4x8x4xbf16>, tensor<2x4x8x4xbf16>, tensor<2x4x8x4xbf16> -> tensor<2x4x8x4xbf16>
  return %o : tensor<2x4x8x4xbf16>
}

// -----

// A full per-head bias [B, Hq, Nq, Nk] is regrouped like Q.

// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @bias_full
// CHECK: %[[BG:.+]] = tensor.expand_shape %{{.+}} {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 1, 4, 8, 8] : tensor<2x4x8x8xf32> into tensor<2x1x4x8x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[BIAS]], #[[BIAS]]], {{.*}} ins(%[[BG]] : tensor<2x1x4x8x8xf32>)
func.func @bias_full(%q: tensor<2x4x8x4xf32>, %k: tensor<2x1x8x4xf32>, %v: tensor<2x1x8x4xf32>, %bias: tensor<2x4x8x8xf32>) -> tensor<2x4x8x4xf32> {
  %o = fa.attention %q, %k, %v bias(%bias : tensor<2x4x8x8xf32>) : tensor<2x4x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32> -> tensor<2x4x8x4xf32>
  return %o : tensor<2x4x8x4xf32>
}

// -----

// score_mod is inlined with (s, b, h, i, j), h = hkv * G + g the query head;
// mask_mod's i1 is combined with causal by `and`.

// CHECK-LABEL: func.func @mods
// CHECK: ^bb0(%[[X:[^:]+]]: f32):
// CHECK-NEXT:   %[[B:.+]] = linalg.index 0 : index
// CHECK-NEXT:   %[[HK:.+]] = linalg.index 1 : index
// CHECK-NEXT:   %[[HG:.+]] = linalg.index 2 : index
// CHECK-NEXT:   %[[HB:.+]] = arith.muli %[[HK]], %[[G:.+]] : index
// CHECK-NEXT:   %[[H:.+]] = arith.addi %[[HB]], %[[HG]] : index
// CHECK-NEXT:   %[[I:.+]] = linalg.index 3 : index
// CHECK-NEXT:   %[[J:.+]] = linalg.index 4 : index
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   %[[S:.+]] = arith.mulf %[[X]]
// CHECK-NEXT:   %[[HI:.+]] = arith.index_cast %[[H]] : index to i64
// CHECK-NEXT:   %[[HF:.+]] = arith.sitofp %[[HI]] : i64 to f32
// CHECK-NEXT:   %[[SM:.+]] = arith.addf %[[S]], %[[HF]] : f32
// CHECK-NEXT:   %[[C:.+]] = arith.cmpi sle, %[[J]], %[[I]] : index
// CHECK-NEXT:   %[[NB:.+]] = arith.cmpi ne, %[[B]], %[[J]] : index
// CHECK-NEXT:   %[[KEEP:.+]] = arith.andi %[[C]], %[[NB]] : i1
// CHECK-NEXT:   %[[NINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT:   %[[R:.+]] = arith.select %[[KEEP]], %[[SM]], %[[NINF]] : f32
// CHECK-NEXT:   linalg.yield %[[R]] : f32
func.func @mods(%q: tensor<2x4x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>) -> tensor<2x4x8x4xf32> {
  %o = fa.attention %q, %k, %v {causal = #fa.causal<top_left>} : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x4x8x4xf32>
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
      %hi = arith.index_cast %h : index to i64
      %hf = arith.sitofp %hi : i64 to f32
      %r = arith.addf %s, %hf : f32
      fa.yield %r : f32
    } mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %ne = arith.cmpi ne, %b, %j : index
      fa.yield %ne : i1
    }
  return %o : tensor<2x4x8x4xf32>
}

// -----

// fa.attention_grad is not the reference's business: it stays.

// CHECK-LABEL: func.func @grad_untouched
// CHECK: fa.attention_grad
func.func @grad_untouched(%q: tensor<1x1x8x4xf32>, %o: tensor<1x1x8x4xf32>, %lse: tensor<1x1x8xf32>) -> (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) {
  %dq, %dk, %dv = fa.attention_grad %q, %q, %q, %o, %o, %lse : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8xf32> -> tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>
  return %dq, %dk, %dv : tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>
}
