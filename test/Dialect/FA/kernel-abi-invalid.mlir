// RUN: fa-opt %s -split-input-file -verify-diagnostics

// #fa.kernel_abi's parser and verifier (fa::runtime::verifyKernelAbi): one
// case per error.

// expected-error @+1 {{a grid axis is tiles(N, R), Hq, Hkv, B or 1, not 'Nq'}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [Nq, Hq, B], threads = 128, shared = 0, params = []>}

// -----

// expected-error @+1 {{kernel ABI: grid x must be tiles(Nq, R), tiles(Nk, R), persistent(Nq, R, C) or 1, got Hq}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [Hq, Hq, B], threads = 128, shared = 0, params = [Hq : i32, B : i32]>}

// -----

// expected-error @+1 {{a grid axis is tiles(N, R), Hq, Hkv, B or 1}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [2, 1, 1], threads = 128, shared = 0, params = []>}

// -----

// expected-error @+1 {{tiles are of Nq or Nk}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [tiles(B, 64), 1, 1], threads = 128, shared = 0, params = []>}

// -----

// expected-error @+1 {{kernel ABI: grid x: tiles need rows > 0}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [tiles(Nq, 0), 1, 1], threads = 128, shared = 0, params = []>}

// -----

// expected-error @+1 {{kernel ABI: grid z must be B or 1, got Hq}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, Hq], threads = 128, shared = 0, params = [Hq : i32]>}

// -----

// The folded grid's kernel reads its H and B.
// expected-error @+1 {{kernel ABI: grid y is Hkv, which the kernel must take}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [tiles(Nk, 64), Hkv, B], threads = 128, shared = 0, params = [B : i32]>}

// -----

// expected-error @+1 {{kernel ABI: threads must be 1 to 1024, got 2048}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 2048, shared = 0, params = []>}

// -----

// expected-error @+1 {{unknown kernel parameter 'x'}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [x : ptr]>}

// -----

// expected-error @+1 {{unknown tensor 'capture01'}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [stride(capture01, 0) : i64]>}

// -----

// expected-error @+1 {{a parameter's type is ptr, i32, i64, f32 or tmap, not 'f16'}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [q : f16]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (q : i64): a pointer is passed as ptr}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [q : i64]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (stride(lse, 3) : i64): lse has 3 dims}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [stride(lse, 3) : i64]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (Nq : f32): a size is passed as i32 or i64}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [Nq : f32]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (scale_log2 : i32): scale_log2 is passed as f32}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [scale_log2 : i32]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 1 (q : ptr) repeats parameter 0}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [q : ptr, q : ptr]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (dq_accum(0) : ptr): only dq_accum has a row length, and it must be positive}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [dq_accum(0) : ptr]>}

// -----

// expected-error @+1 {{kernel ABI: capture 0 has no pointer}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [capture1 : ptr, stride(capture1, 0) : i64]>}

// -----

// expected-error @+1 {{kernel ABI: capture 0 needs the strides of dims 0 to its rank - 1}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [capture0 : ptr, stride(capture0, 1) : i64]>}

// -----

// Tensor maps: of the [B, H, N, D] tensors, D a multiple of 64, boxes of 1
// to 256 rows, passed as tmap (and only they).
// expected-error @+1 {{unknown tensor 'kv'}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [tensor_map(kv, 128, 8) : tmap]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (tensor_map(lse, 128, 8) : tmap): a tensor map is of q, k, v, o, do, dq, dk, dv or bias}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [tensor_map(lse, 128, 8) : tmap]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (tensor_map(k, 92, 8) : tmap): a tensor map's columns must be a positive multiple of 8, at most 16384, got 92}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [tensor_map(k, 92, 8) : tmap]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (tensor_map(k, 128, 257) : tmap): a tensor map's box rows must be 1 to 256, got 257}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [tensor_map(k, 128, 257) : tmap]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (tensor_map(k, 128, 8) : ptr): a tensor map is passed as tmap}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [tensor_map(k, 128, 8) : ptr]>}

// -----

// expected-error @+1 {{kernel ABI: parameter 0 (k : tmap): a pointer is passed as ptr}}
func.func private @f() attributes {abi = #fa.kernel_abi<grid = [1, 1, 1], threads = 128, shared = 0, params = [k : tmap]>}
