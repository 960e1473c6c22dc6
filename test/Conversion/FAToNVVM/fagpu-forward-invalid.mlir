// RUN: fa-opt %s -convert-fa-to-nvvm -split-input-file -verify-diagnostics

!m = memref<?x?x?x64xbf16>
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    // expected-error @+1 {{convert-fa-to-nvvm: an fagpu kernel takes Q, K, V, O and optionally lse, bias, slopes, captures and key ranges (memrefs) and a seed (i64)}}
    gpu.func @k(%q: !m, %k: !m, %v: !m) kernel attributes {fa.block_q = 64 : i64} {
      %b, %h, %t = fagpu.block_coords
      gpu.return
    }
  }
}

// -----

!m = memref<?x?x?x64xbf16>
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    // expected-error @+1 {{convert-fa-to-nvvm: the kernel has no 'fa.block_q' (outline it with fa-fuse)}}
    gpu.func @k(%q: !m, %k: !m, %v: !m, %o: !m) kernel {
      %b, %h, %t = fagpu.block_coords
      gpu.return
    }
  }
}

// -----

!m = memref<?x?x?x64xbf16>
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    gpu.func @k(%q: !m, %k: !m, %v: !m, %o: !m) kernel attributes {fa.block_q = 64 : i64} {
      %c1 = arith.constant 1 : index
      // The kernel passes the row counts of its buffers, and Q's batch and
      // heads (a persistent kernel counts its items from them), no other
      // size.
      // expected-error @+1 {{convert-fa-to-nvvm: the kernel has no parameter for dim 1 of this buffer}}
      %h = memref.dim %k, %c1 : !m
      %s = fagpu.alloc_shared {offset = 0} : !fagpu.shared<1x64x64xbf16>
      fagpu.copy %q[%h, %h, %h] bound %h to %s[%h] : !m to !fagpu.shared<1x64x64xbf16>
      gpu.return
    }
  }
}

// -----

// Dropout's seed is an i64.
!m = memref<?x?x?x64xbf16>
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    // expected-error @+1 {{convert-fa-to-nvvm: an fagpu kernel takes Q, K, V, O and optionally lse, bias, slopes, captures and key ranges (memrefs) and a seed (i64)}}
    gpu.func @k(%q: !m, %k: !m, %v: !m, %o: !m, %seed: i32 {fa.abi = "seed"}) kernel attributes {fa.block_q = 64 : i64} {
      %b, %h, %t = fagpu.block_coords
      gpu.return
    }
  }
}

// -----

!m = memref<?x?x?x64xbf16>
module attributes {gpu.container_module} {
  gpu.module @fa_kernels [#nvvm.target<chip = "sm_90a">] {
    // expected-error @+1 {{convert-fa-to-nvvm: argument 4 of the fagpu kernel has no role the ABI knows ('scale')}}
    gpu.func @k(%q: !m, %k: !m, %v: !m, %o: !m, %x: memref<?xf32> {fa.abi = "scale"}) kernel attributes {fa.block_q = 64 : i64} {
      %b, %h, %t = fagpu.block_coords
      gpu.return
    }
  }
}
