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
