// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

// convert-fa-to-nvvm lowers the kernels fa-tile wrote in fagpu ops; an
// fa.attention left on the host, or in a kernel, is refused.
func.func @host(%q: tensor<1x1x8x64xbf16>) -> tensor<1x1x8x64xbf16> {
  // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: outline fa.attention into a kernel with fa-fuse first}}
  %o = fa.attention %q, %q, %q : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
  return %o : tensor<1x1x8x64xbf16>
}

// -----

// A forward kernel fa-tile has not written in fagpu ops.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels {
    gpu.func @k(%q: memref<1x1x8x64xbf16>, %k: memref<1x1x8x64xbf16>, %v: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel attributes {fa.block_q = 64 : i64, fa.block_kv = 64 : i64} {
      %tq = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %tk = bufferization.to_tensor %k restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %tv = bufferization.to_tensor %v restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      // expected-error @+1 {{'fa.attention' op convert-fa-to-nvvm: the forward kernel must be written in fagpu ops by fa-tile first}}
      %r = fa.attention %tq, %tk, %tv : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16>
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}
