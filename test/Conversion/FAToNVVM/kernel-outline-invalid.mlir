// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

// convert-fa-to-nvvm lowers the kernels fa-fuse outlined; an fa.attention
// left on the host is refused.
func.func @host(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: outline fa.attention into a kernel with fa-fuse first}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// A kernel without fa-fuse's tile.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    // expected-error @+1 {{'gpu.func' op convert-fa-to-nvvm: the kernel has no 'fa.block_q' and 'fa.block_kv' (outline it with fa-fuse)}}
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel {
      %t = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %r = fa.attention %t, %t, %t : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}

// -----

// Tiles and stages the kernel builder does not have.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    // expected-error @+1 {{'gpu.func' op convert-fa-to-nvvm: kv-stages must be 1 to 4 (got 6)}}
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 64 : i64, fa.block_kv = 64 : i64, fa.kv_stages = 6 : i64} {
      %t = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %r = fa.attention %t, %t, %t : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    // expected-error @+1 {{'gpu.func' op convert-fa-to-nvvm: block-q must be 64 or 128 (got 32)}}
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 32 : i64, fa.block_kv = 64 : i64} {
      %t = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %r = fa.attention %t, %t, %t : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}

// -----

// The op must read the kernel's arguments and store into them: here O is
// never stored.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    gpu.func @k(%q: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 64 : i64, fa.block_kv = 64 : i64} {
      %t = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: the kernel's fa.attention must read its operands from the kernel's arguments and store its results into them (as fa-fuse outlines it)}}
      %r = fa.attention %t, %t, %t : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      gpu.return
    }
  }
}
