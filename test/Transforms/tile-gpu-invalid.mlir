// RUN: fa-opt %s -fa-tile -split-input-file -verify-diagnostics

// A kernel with an fa.attention but not fa-fuse's tile attributes.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    // expected-error @+1 {{fa-tile: the kernel has no 'fa.block_q' and 'fa.block_kv' (outline it with fa-fuse)}}
    gpu.func @k(%q: tensor<1x1x64x64xbf16>) kernel {
      %o = fa.attention %q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x1x64x64xbf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    // expected-error @+1 {{fa-tile: block-q must be 64 or 128 (got 32)}}
    gpu.func @k(%q: tensor<1x1x64x64xbf16>) kernel attributes {fa.block_q = 32 : i64, fa.block_kv = 64 : i64} {
      %o = fa.attention %q, %q, %q : tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16>, tensor<1x1x64x64xbf16> -> tensor<1x1x64x64xbf16>
      gpu.return
    }
  }
}

// -----

// The op must read the kernel's arguments and store into them: here O is
// never stored.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %k: memref<1x1x8x64xbf16>, %v: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 64 : i64, fa.block_kv = 64 : i64} {
      %tq = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %tk = bufferization.to_tensor %k restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %tv = bufferization.to_tensor %v restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      // expected-error @+1 {{'fa.attention' op fa-tile: the kernel's fa.attention must read its operands from the kernel's arguments and store its results into them (Q, K, V, O and lse first, as fa-fuse outlines it)}}
      %r = fa.attention %tq, %tk, %tv : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      gpu.return
    }
  }
}

// -----

// K read from Q's argument.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %k: memref<1x1x8x64xbf16>, %v: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 64 : i64, fa.block_kv = 64 : i64} {
      %tq = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %tv = bufferization.to_tensor %v restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      // expected-error @+1 {{fa-tile: the kernel's fa.attention must read its operands}}
      %r = fa.attention %tq, %tq, %tv : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}
