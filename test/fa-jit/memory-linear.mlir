// Memory stays linear in N: B = H = 1, N = 32768, D = 64 in f32. A score
// matrix alone would be 32768^2 * 4 bytes = 4096 MiB; the tiled online form
// needs Q, K, V, O (8 MiB each) and tiles. The peak RSS of the whole process
// (JIT and all) must stay under 1 GiB.
// RUN: fa-jit --shape=1,1,1,32768,32768,64 --dtype=f32 --print-peak-memory \
// RUN:   | %python -c "import re,sys; t=sys.stdin.read(); print(t); mb=int(re.search(r'peak_rss_mb=(\d+)', t).group(1)); print('LINEAR' if mb < 1024 else 'QUADRATIC', mb)" \
// RUN:   | FileCheck %s
// CHECK: Nq=32768 Nk=32768 D=64
// CHECK: LINEAR
