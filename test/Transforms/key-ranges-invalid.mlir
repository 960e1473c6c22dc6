// RUN: fa-opt %s -fa-key-ranges -verify-diagnostics

// fa-key-ranges passes the forward's captures to the key-range kernel: they
// must be arguments of the kernel, as fa-fuse outlines them.
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    gpu.func @fa_forward_0(%q: memref<1x1x8x64xbf16>, %o: memref<1x1x8x64xbf16>) kernel attributes {fa.block_kv = 128 : i64, fa.block_q = 128 : i64} {
      %t = bufferization.to_tensor %q restrict : memref<1x1x8x64xbf16> to tensor<1x1x8x64xbf16>
      %doc = arith.constant dense<0> : tensor<8xi32>
      // expected-error @+1 {{'fa.attention' op fa-key-ranges: the kernel's captures must be its arguments (outline it with fa-fuse)}}
      %r = fa.attention %t, %t, %t captures(%doc : tensor<8xi32>) : tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16>, tensor<1x1x8x64xbf16> -> tensor<1x1x8x64xbf16> mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<8xi32>):
        %di = tensor.extract %d[%i] : tensor<8xi32>
        %dj = tensor.extract %d[%j] : tensor<8xi32>
        %same = arith.cmpi eq, %di, %dj : i32
        fa.yield %same : i1
      }
      bufferization.materialize_in_destination %r in restrict writable %o : (tensor<1x1x8x64xbf16>, memref<1x1x8x64xbf16>) -> ()
      gpu.return
    }
  }
}
