// RUN: fa-opt %s | fa-opt | FileCheck %s
// RUN: fa-opt %s -mlir-print-op-generic | fa-opt | FileCheck %s

// Round trip of #fa.kernel_abi, the typed launch description of a GPU kernel
// (include/fa/Runtime/KernelAbi.h): its grid rule, threads, shared memory
// and parameters, each what it is and its machine type. It prints in the
// canonical text the kernel cache stores; any spacing parses.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 49152, params = [q : ptr, stride(q, 0) : i64, stride(lse, 1) : i64, Nq : i32, Nk : i32, group : i32, Hq : i32, B : i32, scale_log2 : f32]>
func.func @forward() attributes {fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 128, shared = 49152,
    params = [q : ptr, stride(q, 0) : i64, stride(lse, 1) : i64,
              Nq : i32, Nk : i32, group : i32, Hq : i32, B : i32,
              scale_log2 : f32]>} {
  return
}

// Every kind of parameter: the backward's tensors, the dQ accumulator of D
// = 64 floats per row, the scored path's bias, slopes and dBias, the seed,
// i64 sizes, i32 strides, and captures (a pointer, one stride per dim).
// CHECK-LABEL: func.func @every_kind
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 256, shared = 202752, params = [do : ptr, dq : ptr, dk : ptr, dv : ptr, dsum : ptr, dq_accum(64) : ptr, bias : ptr, stride(bias, 3) : i32, slopes : ptr, stride(slopes, 0) : i64, dbias : ptr, stride(dbias, 2) : i64, Hkv : i64, B : i64, scale : f32, seed : i64, capture0 : ptr, stride(capture0, 0) : i64, capture1 : ptr, stride(capture1, 0) : i64, stride(capture1, 1) : i64]>
func.func @every_kind() attributes {fa.kernel_abi = #fa.kernel_abi<grid=[tiles(Nk,64),Hkv,B],threads=256,shared=202752,params=[do:ptr,dq:ptr,dk:ptr,dv:ptr,dsum:ptr,dq_accum(64):ptr,bias:ptr,stride(bias,3):i32,slopes:ptr,stride(slopes,0):i64,dbias:ptr,stride(dbias,2):i64,Hkv:i64,B:i64,scale:f32,seed:i64,capture0:ptr,stride(capture0,0):i64,capture1:ptr,stride(capture1,0):i64,stride(capture1,1):i64]>} {
  return
}

// Tensor maps (TMA): q's in boxes of 128 rows, k's and v's in boxes of 64
// (the same tensor twice, in boxes of other rows, is two parameters), and a
// backward's dv of D = 256; each 128 bytes passed as tmap.
// CHECK-LABEL: func.func @tensor_maps
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 384, shared = 196608, params = [tensor_map(q, 128, 128) : tmap, tensor_map(k, 128, 64) : tmap, tensor_map(v, 128, 64) : tmap, tensor_map(k, 128, 8) : tmap, tensor_map(dv, 256, 1) : tmap, o : ptr, stride(o, 2) : i64, Nk : i32, Hq : i32, B : i32]>
func.func @tensor_maps() attributes {fa.kernel_abi = #fa.kernel_abi<grid = [tiles(Nq, 128), Hq, B], threads = 384, shared = 196608,
    params = [tensor_map(q, 128, 128) : tmap, tensor_map(k,128,64):tmap,
              tensor_map( v , 128 , 64 ) : tmap, tensor_map(k, 128, 8) : tmap,
              tensor_map(dv, 256, 1) : tmap, o : ptr, stride(o, 2) : i64,
              Nk : i32, Hq : i32, B : i32]>} {
  return
}

// A grid of broadcast axes (dBias of a bias [1, 1, 1, Nk]) and no
// parameters at all.
// CHECK-LABEL: func.func @ones
// CHECK-SAME: fa.kernel_abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 1, shared = 0, params = []>
func.func @ones() attributes {fa.kernel_abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 1, shared = 0, params = []>} {
  return
}
