// RUN: fa-opt %s -split-input-file -fa-host-parallel -canonicalize | FileCheck %s

// A forall becomes a loop that claims linearized iterations (the last
// dimension fastest) from counter 0 of a new last argument until
// B * 4 are claimed; the function says how many counters it takes.

// CHECK-LABEL: func.func @one(
// CHECK-SAME: %[[OUT:.+]]: memref<?x4xf32>, %[[N:.+]]: index, %[[CTR:.+]]: memref<1xi64> {llvm.noalias})
// CHECK-SAME: attributes {fa.shared_loops = 1 : i64}
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : i64
// CHECK: %[[COUNT:.+]] = arith.maxsi %[[N]], %[[C0]] : index
// CHECK: %[[TOTAL:.+]] = arith.muli %[[COUNT]], %[[C4]] : index
// CHECK: scf.while : () -> index {
// CHECK:   %[[OLD:.+]] = memref.atomic_rmw addi %[[ONE]], %[[CTR]][%[[C0]]] : (i64, memref<1xi64>) -> i64
// CHECK:   %[[I:.+]] = arith.index_cast %[[OLD]] : i64 to index
// CHECK:   %[[MORE:.+]] = arith.cmpi ult, %[[I]], %[[TOTAL]] : index
// CHECK:   scf.condition(%[[MORE]]) %[[I]] : index
// CHECK: } do {
// CHECK: ^bb0(%[[L:.+]]: index):
// CHECK:   %[[J:.+]] = arith.remui %[[L]], %[[C4]] : index
// CHECK:   %[[Q:.+]] = arith.divui %[[L]], %[[C4]] : index
// CHECK:   %[[R:.+]] = arith.remui %[[Q]], %[[COUNT]] : index
// CHECK:   memref.store %{{.+}}, %[[OUT]][%[[R]], %[[J]]]
// CHECK-NOT: scf.forall
func.func @one(%out: memref<?x4xf32>, %n: index) {
  %c4 = arith.constant 4 : index
  %cst = arith.constant 1.0 : f32
  scf.forall (%i, %j) in (%n, %c4) {
    memref.store %cst, %out[%i, %j] : memref<?x4xf32>
  }
  return
}

// -----

// The backward's shape: a prologue that fills the function's own buffer
// (each call computes its copy), two loops that read it and write distinct
// outputs, then its deallocation: two counters.

// CHECK-LABEL: func.func @two(
// CHECK-SAME: %{{.+}}: memref<2xi64> {llvm.noalias}) attributes {fa.shared_loops = 2 : i64}
// CHECK: memref.atomic_rmw addi %{{.+}}[%[[C0:.+]]] :
// CHECK: memref.atomic_rmw addi %{{.+}}[%[[C1:.+]]] :
// CHECK: memref.dealloc
func.func @two(%in: memref<8xf32>, %a: memref<8xf32>, %b: memref<8xf32>) {
  %c8 = arith.constant 8 : index
  %tmp = memref.alloc() : memref<8xf32>
  memref.copy %in, %tmp : memref<8xf32> to memref<8xf32>
  scf.forall (%i) in (%c8) {
    %x = memref.load %tmp[%i] : memref<8xf32>
    memref.store %x, %a[%i] : memref<8xf32>
  }
  scf.forall (%i) in (%c8) {
    %x = memref.load %tmp[%i] : memref<8xf32>
    memref.store %x, %b[%i] : memref<8xf32>
  }
  memref.dealloc %tmp : memref<8xf32>
  return
}

// -----

// Left sequential: a copy after the loop reads what other calls may still
// be writing.

// CHECK-LABEL: func.func @copy_after(
// CHECK-NOT: fa.shared_loops
// CHECK: scf.forall
func.func @copy_after(%out: memref<8xf32>) {
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  %tmp = memref.alloc() : memref<8xf32>
  scf.forall (%i) in (%c8) {
    memref.store %cst, %tmp[%i] : memref<8xf32>
  }
  memref.copy %tmp, %out : memref<8xf32> to memref<8xf32>
  memref.dealloc %tmp : memref<8xf32>
  return
}

// -----

// Left sequential: the second loop reads what the first writes (there is no
// barrier between them).

// CHECK-LABEL: func.func @dependent(
// CHECK-NOT: fa.shared_loops
// CHECK: scf.forall
// CHECK: scf.forall
func.func @dependent(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  scf.forall (%i) in (%c8) {
    memref.store %cst, %a[%i] : memref<8xf32>
  }
  scf.forall (%i) in (%c8) {
    %x = memref.load %a[%i] : memref<8xf32>
    memref.store %x, %b[%i] : memref<8xf32>
  }
  return
}

// -----

// Left sequential: code outside the loops writes an argument (every call
// would).

// CHECK-LABEL: func.func @writes_argument(
// CHECK-NOT: fa.shared_loops
// CHECK: scf.forall
func.func @writes_argument(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %cst = arith.constant 1.0 : f32
  memref.store %cst, %b[%c0] : memref<8xf32>
  scf.forall (%i) in (%c8) {
    memref.store %cst, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// Left sequential: a call has effects the pass cannot see.

// CHECK-LABEL: func.func @opaque(
// CHECK-NOT: fa.shared_loops
// CHECK: scf.forall
func.func private @g(memref<8xf32>)
func.func @opaque(%a: memref<8xf32>) {
  %c8 = arith.constant 8 : index
  scf.forall (%i) in (%c8) {
    func.call @g(%a) : (memref<8xf32>) -> ()
  }
  return
}
