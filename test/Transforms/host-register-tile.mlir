// RUN: fa-opt %s -split-input-file -fa-host-register-tile -canonicalize | FileCheck %s
// RUN: fa-opt %s -split-input-file -fa-host-register-tile="rows=2 cols=8" -canonicalize | FileCheck %s --check-prefix=SMALL

// Q K^T as fa-tile's tiles give it after bufferization: A (Q) at (r, d) and
// B (K) at (c, d), both with dynamic strides; C is the score tile, filled
// with 0 right before. Where N is a multiple of 8, K is packed into a
// contiguous [K, N] f32 buffer (K^T): by 8 x 8 transposes in registers where
// K's rows are contiguous at run time, element by element otherwise. Then
// one kernel: blocks of 4 x 16 scores are held in 8 vectors while the d
// loop broadcasts Q[r, d] and adds its products with two vectors of K^T.
// The sum is reassoc: it goes in chunks of 16 terms from zero, each added
// to C (64 is a multiple of 16: the chunk's trip count is known), so the
// fill stays. The rows and columns that remain go in blocks of 2 and 1
// rows and of one vector. Other widths keep the generic.

// CHECK-LABEL: func.func @qk(
// CHECK-SAME: %[[Q:.+]]: memref<?x64xf32, strided<[?, ?], offset: ?>>, %[[K:.+]]: memref<?x64xf32, strided<[?, ?], offset: ?>>, %[[S:.+]]: memref<?x?xf32>)
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[S]] : memref<?x?xf32>)
// CHECK: %[[M:.+]] = memref.dim %[[S]], %[[C0]]
// CHECK: %[[N:.+]] = memref.dim %[[S]], %[[C1]]
// CHECK: %[[NREM:.+]] = arith.remui %[[N]], %[[C8]]
// CHECK: %[[FIT:.+]] = arith.cmpi eq, %[[NREM]], %[[C0]]
// CHECK: scf.if %[[FIT]] {
// CHECK:   %{{.+}}, %{{.+}}, %{{.+}}:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %[[K]]
// CHECK:   %[[UNIT:.+]] = arith.cmpi eq, %[[STRIDES]]#1, %[[C1]]
// CHECK:   %[[KT:.+]] = memref.alloc(%[[N]]) : memref<64x?xf32>
// CHECK:   scf.if %[[UNIT]] {
// CHECK:     %[[ROWS:.+]] = memref.reinterpret_cast %[[K]] to offset: [%{{.+}}], sizes: [%{{.+}}, 64], strides: [%{{.+}}, 1] : memref<?x64xf32, strided<[?, ?], offset: ?>> to memref<?x64xf32, strided<[?, 1], offset: ?>>
// CHECK:     scf.for %[[N0:.+]] = %[[C0]] to %[[N]] step %[[C8]] {
// CHECK:       scf.for %[[K0:.+]] = %[[C0]] to %[[C64]] step %[[C8]] {
// CHECK:         %[[R0:.+]] = vector.load %[[ROWS]][%[[N0]], %[[K0]]] : memref<?x64xf32, strided<[?, 1], offset: ?>>, vector<8xf32>
// CHECK-COUNT-7: vector.load %[[ROWS]]
// CHECK:         vector.shuffle %[[R0]], %{{.+}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// CHECK-COUNT-23: vector.shuffle
// CHECK:         vector.store %{{.+}}, %[[KT]][%[[K0]], %[[N0]]] : memref<64x?xf32>, vector<8xf32>
// CHECK-COUNT-7: vector.store %{{.+}}, %[[KT]]
// K's rows not contiguous: packed element by element.
// CHECK:   } else {
// CHECK:     scf.for %[[PN:.+]] = %[[C0]] to %[[N]] step %[[C1]] {
// CHECK:       scf.for %[[PK:.+]] = %[[C0]] to %[[C64]] step %[[C1]] {
// CHECK:         %[[X:.+]] = memref.load %[[K]][%[[PN]], %[[PK]]]
// CHECK:         memref.store %[[X]], %[[KT]][%[[PK]], %[[PN]]]
// CHECK:   }
// CHECK:   %[[MREM:.+]] = arith.remui %[[M]], %[[C4]]
// CHECK:   %[[M4:.+]] = arith.subi %[[M]], %[[MREM]]
// CHECK:   %[[MREM2:.+]] = arith.remui %{{.+}}, %[[C2]]
// CHECK:   %[[M2:.+]] = arith.subi %[[M]], %[[MREM2]]
// CHECK:   %[[NREM16:.+]] = arith.remui %[[N]], %[[C16]]
// CHECK:   %[[N16:.+]] = arith.subi %[[N]], %[[NREM16]]
// CHECK:   %[[NREM8:.+]] = arith.remui %{{.+}}, %[[C8]]
// CHECK:   %[[N8:.+]] = arith.subi %[[N]], %[[NREM8]]
// CHECK:   scf.for %[[I0:.+]] = %[[C0]] to %[[M4]] step %[[C4]] {
// CHECK:     scf.for %[[J0:.+]] = %[[C0]] to %[[N16]] step %[[C16]] {
// CHECK:       scf.for %[[K0:.+]] = %[[C0]] to %[[C64]] step %[[C16]] {
// CHECK:         %[[END:.+]] = arith.addi %[[K0]], %[[C16]]
// CHECK:         %[[ACC:.+]]:8 = scf.for %[[D:.+]] = %[[K0]] to %[[END]] step %[[C1]] iter_args(%{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]], %{{.+}} = %[[ZEROS]])
// CHECK:           %[[B0:.+]] = vector.load %[[KT]][%[[D]], %[[J0]]] : memref<64x?xf32>, vector<8xf32>
// CHECK:           %[[B1:.+]] = vector.load %[[KT]][%[[D]], %{{.+}}] : memref<64x?xf32>, vector<8xf32>
// CHECK:           %[[A0:.+]] = memref.load %[[Q]][%[[I0]], %[[D]]]
// CHECK:           %[[A0V:.+]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK:           vector.fma %[[A0V]], %[[B0]], %{{.+}} : vector<8xf32>
// CHECK:           vector.fma %[[A0V]], %[[B1]], %{{.+}} : vector<8xf32>
// CHECK-COUNT-6:   vector.fma
// CHECK:           scf.yield
// CHECK:         %[[OLD:.+]] = vector.load %[[S]][%[[I0]], %[[J0]]]
// CHECK:         %[[NEW:.+]] = arith.addf %[[OLD]], %[[ACC]]#0 : vector<8xf32>
// CHECK:         vector.store %[[NEW]], %[[S]][%[[I0]], %[[J0]]]
// The rest: 4 rows x 1 vector, then 2 rows and 1 row, each by 2 and 1 vectors.
// CHECK:   scf.for %{{.+}} = %[[C0]] to %[[M4]] step %[[C4]] {
// CHECK:     scf.for %{{.+}} = %[[N16]] to %[[N8]] step %[[C8]] {
// CHECK:         scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:   scf.for %{{.+}} = %[[M4]] to %[[M2]] step %[[C2]] {
// CHECK:     scf.for %{{.+}} = %[[C0]] to %[[N16]] step %[[C16]] {
// CHECK:         scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:   scf.for %{{.+}} = %[[M4]] to %[[M2]] step %[[C2]] {
// CHECK:     scf.for %{{.+}} = %[[N16]] to %[[N8]] step %[[C8]] {
// CHECK:         scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>)
// CHECK:   scf.for %{{.+}} = %[[M2]] to %[[M]] step %[[C1]] {
// CHECK:     scf.for %{{.+}} = %[[C0]] to %[[N16]] step %[[C16]] {
// CHECK:         scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>)
// CHECK:   scf.for %{{.+}} = %[[M2]] to %[[M]] step %[[C1]] {
// CHECK:     scf.for %{{.+}} = %[[N16]] to %[[N8]] step %[[C8]] {
// CHECK:         scf.for {{.+}} -> (vector<8xf32>)
// CHECK:   memref.dealloc %[[KT]]
// CHECK: } else {
// CHECK:   linalg.generic
// CHECK-SAME: ins(%[[Q]], %[[K]] : {{.+}}) outs(%[[S]] : memref<?x?xf32>)
// CHECK: }
// CHECK-NOT: linalg.generic

// SMALL-LABEL: func.func @qk(
// SMALL:   %{{.+}}:2 = scf.for
// SMALL-COUNT-2: vector.fma
// SMALL-NOT: vector.fma
// SMALL:   scf.yield
#qa = affine_map<(r, c, d) -> (r, d)>
#qb = affine_map<(r, c, d) -> (c, d)>
#qc = affine_map<(r, c, d) -> (r, c)>
func.func @qk(%q: memref<?x64xf32, strided<[?, ?], offset: ?>>, %k: memref<?x64xf32, strided<[?, ?], offset: ?>>, %s: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<?x?xf32>)
  linalg.generic {indexing_maps = [#qa, #qb, #qc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : memref<?x64xf32, strided<[?, ?], offset: ?>>, memref<?x64xf32, strided<[?, ?], offset: ?>>) outs(%s : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %out, %p fastmath<reassoc,contract> : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// P V with bf16 V, its layout (j, e) already [K, N]: packed row by row and
// extended to f32; P is read at (r, j) and broadcast as it is. The sum in
// the other order (prod + out) is the same contraction. N = 32 is a
// multiple of 8: the generic is gone.

// CHECK-LABEL: func.func @pv(
// CHECK-SAME: %[[P:.+]]: memref<?x?xf32>, %[[V:.+]]: memref<?x32xbf16, strided<[?, ?], offset: ?>>, %[[ACC:.+]]: memref<?x32xf32>)
// CHECK: %[[VP:.+]] = memref.alloc(%[[K:.+]]) : memref<?x32xf32>
// CHECK: scf.for %[[PK:.+]] = %{{.+}} to %[[K]] step
// CHECK:   scf.for %[[PN:.+]] = %{{.+}} to %{{.+}} step
// CHECK:     %[[X:.+]] = memref.load %[[V]][%[[PK]], %[[PN]]] : memref<?x32xbf16
// CHECK:     %[[XF:.+]] = arith.extf %[[X]] : bf16 to f32
// CHECK:     memref.store %[[XF]], %[[VP]][%[[PK]], %[[PN]]]
// CHECK: scf.for %[[J:.+]] = {{.+}} iter_args
// CHECK:   memref.load %[[P]][%{{.+}}, %[[J]]] : memref<?x?xf32>
// CHECK-NOT: linalg.generic
#pa = affine_map<(r, j, e) -> (r, j)>
#pb = affine_map<(r, j, e) -> (j, e)>
#pc = affine_map<(r, j, e) -> (r, e)>
func.func @pv(%p: memref<?x?xf32>, %v: memref<?x32xbf16, strided<[?, ?], offset: ?>>, %acc: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#pa, #pb, #pc], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p, %v : memref<?x?xf32>, memref<?x32xbf16, strided<[?, ?], offset: ?>>) outs(%acc : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: bf16, %out: f32):
    %be = arith.extf %b : bf16 to f32
    %m = arith.mulf %a, %be : f32
    %r = arith.addf %m, %out : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// P V in f32 (the forward's): V's rows are copied a vector at a time
// where they are contiguous at run time, element by element where they are
// not; one kernel reads the copy. The sum is not reassoc: one loop over all
// of k, in order, from C.

// CHECK-LABEL: func.func @pv_f32(
// CHECK-SAME: %[[P:.+]]: memref<?x?xf32>, %[[V:.+]]: memref<?x64xf32, strided<[?, ?], offset: ?>>, %[[ACC:.+]]: memref<?x64xf32>)
// CHECK: %{{.+}}, %{{.+}}, %{{.+}}:2, %[[STRIDES:.+]]:2 = memref.extract_strided_metadata %[[V]]
// CHECK: %[[UNIT:.+]] = arith.cmpi eq, %[[STRIDES]]#1, %{{.+}}
// CHECK: %[[VP:.+]] = memref.alloc(%[[KDIM:.+]]) : memref<?x64xf32>
// CHECK: scf.if %[[UNIT]] {
// CHECK:   %[[ROWS:.+]] = memref.reinterpret_cast %[[V]]
// CHECK:   %[[ROW:.+]] = vector.load %[[ROWS]][%{{.+}}, %{{.+}}] : memref<?x64xf32, strided<[?, 1], offset: ?>>, vector<8xf32>
// CHECK:   vector.store %[[ROW]], %[[VP]]
// CHECK: } else {
// CHECK:   memref.load %[[V]]
// CHECK: }
// CHECK: %[[INIT:.+]] = vector.load %[[ACC]]
// CHECK: scf.for %[[J:.+]] = %{{.+}} to %[[KDIM]] step %{{.+}} iter_args(%{{.+}} = %[[INIT]],
// CHECK:   vector.load %[[VP]][%[[J]], %{{.+}}] : memref<?x64xf32>, vector<8xf32>
// CHECK-NOT: arith.minui
#fa = affine_map<(r, j, e) -> (r, j)>
#fb = affine_map<(r, j, e) -> (j, e)>
#fc = affine_map<(r, j, e) -> (r, e)>
func.func @pv_f32(%p: memref<?x?xf32>, %v: memref<?x64xf32, strided<[?, ?], offset: ?>>, %acc: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#fa, #fb, #fc], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p, %v : memref<?x?xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>) outs(%acc : memref<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %out, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The backward's dV += P^T dO: A read at (k, m); dO's rows are contiguous
// in its type, so they are copied a vector at a time, with no run-time
// check.

// CHECK-LABEL: func.func @at(
// CHECK-SAME: %[[P:[a-z0-9]+]]: memref<?x?xf32>, %[[D:[a-z0-9]+]]: memref<?x64xf32>
// CHECK-NOT: scf.if
// CHECK: %[[DP:.+]] = memref.alloc
// CHECK: vector.load %[[D]]
// CHECK: scf.for %[[K:.+]] = {{.+}} iter_args
// CHECK:   vector.load %[[DP]][%[[K]], %{{.+}}] : memref<?x64xf32>, vector<8xf32>
// CHECK:   memref.load %[[P]][%[[K]], %{{.+}}] : memref<?x?xf32>
#aa = affine_map<(x, y, e) -> (y, x)>
#ab = affine_map<(x, y, e) -> (y, e)>
#ac = affine_map<(x, y, e) -> (x, e)>
func.func @at(%p: memref<?x?xf32>, %d: memref<?x64xf32>, %dv: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#aa, #ab, #ac], iterator_types = ["parallel", "reduction", "parallel"]} ins(%p, %d : memref<?x?xf32>, memref<?x64xf32>) outs(%dv : memref<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %out, %m : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Left as they are: C with a non-unit inner stride, a body that is not
// out + a * b, tensors, a reduction into C's rows only.

// CHECK-LABEL: func.func @kept(
// CHECK-NOT: vector.fma
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: vector.fma
#ka = affine_map<(r, c, d) -> (r, d)>
#kb = affine_map<(r, c, d) -> (c, d)>
#kc = affine_map<(r, c, d) -> (r, c)>
#id = affine_map<(r, c) -> (r, c)>
#row = affine_map<(r, c) -> (r)>
func.func @kept(%q: memref<?x64xf32>, %k: memref<?x64xf32>, %s: memref<?x?xf32, strided<[?, ?]>>, %s2: memref<?x?xf32>, %t: tensor<?x64xf32>, %ts: tensor<?x?xf32>, %m: memref<?xf32>) -> tensor<?x?xf32> {
  linalg.generic {indexing_maps = [#ka, #kb, #kc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : memref<?x64xf32>, memref<?x64xf32>) outs(%s : memref<?x?xf32, strided<[?, ?]>>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %out, %p : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#ka, #kb, #kc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : memref<?x64xf32>, memref<?x64xf32>) outs(%s2 : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.maximumf %out, %p : f32
    linalg.yield %r : f32
  }
  %0 = linalg.generic {indexing_maps = [#ka, #kb, #kc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t, %t : tensor<?x64xf32>, tensor<?x64xf32>) outs(%ts : tensor<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %out, %p : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%s2 : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %out, %a : f32
    linalg.yield %r : f32
  }
  return %0 : tensor<?x?xf32>
}
