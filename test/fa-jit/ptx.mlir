// The GPU kernels assemble with ptxas for sm_80 and sm_90a, and the main
// variants (D = 64 and 128, bf16 and f16, causal or not, each with its
// default tile; wgmma on sm_90a, mma.sync on sm_80 or with
// --fwd-wgmma=false) use no local memory, but for the one below.
// REQUIRES: ptxas
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,128 --causal=bottom-right --lse > %t.90.128.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.128.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,128 --lse --fwd-warp-specialize=false > %t.90.128.plain.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.128.plain.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WGMMA < %t.90.128.plain.ptx
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,128 --lse > %t.90.128.ws.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.128.ws.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WS < %t.90.128.ws.ptx
// By default the plain kernel has a producer warpgroup (384 threads) that
// copies with TMA, and two consumer warpgroups that take turns (named
// barriers of 256 threads) and run the softmax under P V (a wgmma group
// left pending).
// WS: .maxntid 384, 1, 1
// WS-DAG: setmaxnreg.inc.sync.aligned.u32 {{[[:space:]]*}}240;
// WS-DAG: setmaxnreg.dec.sync.aligned.u32 {{[[:space:]]*}}24;
// WS-DAG: mbarrier.arrive.expect_tx.shared.b64
// WS-DAG: cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// WS-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// WS-DAG: bar.sync {{.*}}, 256;
// WS-DAG: bar.arrive
// WS-DAG: wgmma.wait_group.sync.aligned 1;
// mma.sync's D = 128 without a mask (two m-tiles, 128 x 64, two stages)
// spills 24 bytes on sm_90a, and is still 1-3% faster than one stage (which
// does not spill) and 5-10% faster than its other tiles (docs/performance.md).
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,128 --lse --fwd-wgmma=false > %t.90.128.mma.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.128.mma.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=SPILL
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,16,16,1,1,128 --kv-stages=1 > %t.90.128.f16.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.128.f16.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,16,16,1,1,128 --lse > %t.80.128.plain.ptx
// RUN: %ptxas -arch=sm_80 -v %t.80.128.plain.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,32,32,1,1,64 --causal=bottom-right > %t.90.64.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.64.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,16,4,1,1,128 --causal=top-left --lse > %t.80.128.ptx
// RUN: %ptxas -arch=sm_80 -v %t.80.128.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,8,1,1,64 --window=128,0 > %t.80.64.ptx
// RUN: %ptxas -arch=sm_80 -v %t.80.64.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t.90.128.mma.ptx
// The wide default K/V tiles: 192 keys at D = 64, 112 at D = 192 (causal),
// 80 at D = 256.
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,64 > %t.90.64.wide.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.64.wide.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WIDE64 < %t.90.64.wide.ptx
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,16,16,1,1,192 --causal=top-left --lse > %t.90.192.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.192.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WIDE192 < %t.90.192.ptx
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,16,16,1,1,256 > %t.90.256.ptx
// RUN: %ptxas -arch=sm_90a -v %t.90.256.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=WIDE256 < %t.90.256.ptx
// WIDE64: wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16
// WIDE192: wgmma.mma_async.sync.aligned.m64n112k16.f32.f16.f16
// WIDE256: wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16
// CHECK: Compiling entry function 'fa_forward_0'
// CHECK: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill
// SPILL: Compiling entry function 'fa_forward_0'
// SPILL: 24 bytes spill stores
// wgmma's D = 128 kernel: two warpgroups of 64 rows, 128 x 128 tiles, Q and
// K read from shared memory, P from registers.
// WGMMA: .maxntid 256, 1, 1
// WGMMA-DAG: fence.proxy.async.shared::cta
// WGMMA-DAG: wgmma.fence.sync.aligned
// WGMMA-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, %rd{{[0-9]+}}, %rd{{[0-9]+}}, p, 1, 1, 0, 0;
// WGMMA-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1, 1;
// WGMMA-DAG: wgmma.commit_group.sync.aligned
// WGMMA-DAG: wgmma.wait_group.sync.aligned 0
// PTX: .target sm_90a
// PTX: .visible .entry fa_forward_0(
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: ex2.approx.ftz.f32
// PTX-DAG: fma.rn.ftz.f32
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
