// Every forward tile configuration fa-jit --block-q/--block-kv offers for
// sweeps (bench/fwd_tile_sweep.sh) with one K/V stage, and each D's
// default, assembles with ptxas for sm_80 and sm_90a with no spills: bf16
// causal with lse, and f16 with softcap, a window and lse (the most
// registers). Not kept, because
// they spill (ptxas -v, CUDA 13): D = 64 128x128; D = 96 128x64, 64x128
// (softcap); D = 128 128x64 (with causal masks; D = 128's default without
// masks, two stages of 128x64, is in ptx.mlir), 128x128, and on sm_90a
// 128x32; D = 256 64x128 and two m-tiles.
// With --kv-stages=2 (K and V double-buffered) the same for D = 64 128x64,
// D = 128 64x128, 64x64 and on sm_80 128x32, D = 256 64x32 (64x64 spills 8
// bytes on sm_80 with softcap); with 3 stages D = 32 and 64 128x64, D = 128
// 64x64, D = 256 64x32; with 4, D = 64 128x64.
// REQUIRES: ptxas
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,32 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_80.32.128x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.32.128x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,32 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_80.32.128x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.32.128x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,32 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_90a.32.128x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.32.128x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,32 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_90a.32.128x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.32.128x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_80.64.128x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_80.64.128x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_90a.64.128x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=1 > %t.sm_90a.64.128x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.64.128x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.64.128x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_90a.64.128x32.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_90a.64.128x32.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.64.64x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.64.64x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.64.64x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.64.64x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_80.64.64x128.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.64x128.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_80.64.64x128.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.64x128.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_90a.64.64x128.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.64x128.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_90a.64.64x128.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.64x128.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.96.64x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.96.64x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.96.64x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.96.64x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.96.64x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.96.64x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.96.64x32.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.96.64x32.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.96.128x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.128x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.96.128x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.96.128x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_90a.96.128x32.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.128x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,96 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_90a.96.128x32.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.128x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.128.64x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.128.64x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.128.64x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.128.64x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.128.64x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.128.64x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.128.64x32.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.128.64x32.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_80.128.64x128.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x128.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_80.128.64x128.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x128.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_90a.128.64x128.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x128.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=1 > %t.sm_90a.128.64x128.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x128.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.128.128x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.128x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=1 > %t.sm_80.128.128x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.128x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.256.64x32.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_80.256.64x32.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.256.64x32.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=1 > %t.sm_90a.256.64x32.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.256.64x64.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_80.256.64x64.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.256.64x64.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x64.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=1 > %t.sm_90a.256.64x64.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x64.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=2 > %t.sm_80.64.128x64.s2.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=2 > %t.sm_80.64.128x64.s2.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=2 > %t.sm_90a.64.128x64.s2.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=2 > %t.sm_90a.64.128x64.s2.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=2 > %t.sm_80.128.64x128.s2.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x128.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=2 > %t.sm_80.128.64x128.s2.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x128.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=128 --kv-stages=2 > %t.sm_90a.128.64x128.s2.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x128.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=128 --kv-stages=2 > %t.sm_90a.128.64x128.s2.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x128.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=2 > %t.sm_80.128.64x64.s2.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=2 > %t.sm_80.128.64x64.s2.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=2 > %t.sm_90a.128.64x64.s2.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=2 > %t.sm_90a.128.64x64.s2.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=128 --block-kv=32 --kv-stages=2 > %t.sm_80.128.128x32.s2.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.128x32.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=32 --kv-stages=2 > %t.sm_80.128.128x32.s2.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.128x32.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=2 > %t.sm_80.256.64x32.s2.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=2 > %t.sm_80.256.64x32.s2.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=2 > %t.sm_90a.256.64x32.s2.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.s2.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=2 > %t.sm_90a.256.64x32.s2.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.s2.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_80.64.128x64.s3.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_80.64.128x64.s3.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_90a.64.128x64.s3.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_90a.64.128x64.s3.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=4 > %t.sm_80.64.128x64.s4.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s4.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=4 > %t.sm_80.64.128x64.s4.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.64.128x64.s4.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=4 > %t.sm_90a.64.128x64.s4.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s4.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,64 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=4 > %t.sm_90a.64.128x64.s4.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.128x64.s4.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,32 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_80.32.128x64.s3.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.32.128x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,32 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_80.32.128x64.s3.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.32.128x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,32 --causal=bottom-right --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_90a.32.128x64.s3.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.32.128x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,32 --softcap=30 --window=64,16 --lse --block-q=128 --block-kv=64 --kv-stages=3 > %t.sm_90a.32.128x64.s3.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.32.128x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=3 > %t.sm_80.128.64x64.s3.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=3 > %t.sm_80.128.64x64.s3.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.128.64x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,128 --causal=bottom-right --lse --block-q=64 --block-kv=64 --kv-stages=3 > %t.sm_90a.128.64x64.s3.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,128 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=64 --kv-stages=3 > %t.sm_90a.128.64x64.s3.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.128.64x64.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=3 > %t.sm_80.256.64x32.s3.0.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_80 --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=3 > %t.sm_80.256.64x32.s3.1.ptx
// RUN: %ptxas -arch=sm_80 -v %t.sm_80.256.64x32.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --causal=bottom-right --lse --block-q=64 --block-kv=32 --kv-stages=3 > %t.sm_90a.256.64x32.s3.0.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.s3.0.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=f16 --shape=1,8,2,1,1,256 --softcap=30 --window=64,16 --lse --block-q=64 --block-kv=32 --kv-stages=3 > %t.sm_90a.256.64x32.s3.1.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.64x32.s3.1.ptx -o %t.cubin 2>&1 | FileCheck %s
// Persistent windows (each item's key range in the producer): the defaults
// at D = 96 with causal and D = 256 with bottom-right causal and lse, and
// `always` at D = 64 (these spilled 4-16 bytes at the producer's 24).
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,96 --window=256,0 --causal=top-left > %t.sm_90a.96.window.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.96.window.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,256 --window=100,20 --causal=bottom-right --lse > %t.sm_90a.256.window.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.256.window.ptx -o %t.cubin 2>&1 | FileCheck %s
// RUN: fa-jit --target=sm_90a --emit=ptx --dtype=bf16 --shape=1,8,2,1,1,64 --window=256,0 --fwd-persistent=always > %t.sm_90a.64.window.ptx
// RUN: %ptxas -arch=sm_90a -v %t.sm_90a.64.window.ptx -o %t.cubin 2>&1 | FileCheck %s
// CHECK: Compiling entry function 'fa_forward_0'
// CHECK: {{^ +}}0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: bytes spill
