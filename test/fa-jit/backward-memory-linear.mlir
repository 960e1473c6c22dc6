// The backward's memory stays linear in N: B = H = 1, N = 16384, D = 64 in
// f32. A score matrix alone would be 16384^2 * 4 bytes = 1024 MiB; the
// tiled backward needs Q, K, V, O, dO, dQ, dK, dV (4 MiB each), lse and
// tiles. The peak RSS of the whole process (JIT, forward and backward) must
// stay under 512 MiB.
// RUN: fa-jit --backward --shape=1,1,1,16384,16384,64 --dtype=f32 --print-peak-memory \
// RUN:   | %python -c "import re,sys; t=sys.stdin.read(); print(t); mb=int(re.search(r'peak_rss_mb=(\d+)', t).group(1)); print('LINEAR' if mb < 512 else 'QUADRATIC', mb)" \
// RUN:   | FileCheck %s
// CHECK: fa.attention_grad on host: f32 B=1 Hq=1 Hkv=1 Nq=16384 Nk=16384 D=64
// CHECK: LINEAR
