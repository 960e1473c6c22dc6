#!/usr/bin/env bash
# The GPU half of the suite: fa-jit --target=auto runs every supported variant
# on the GPU and checks it against the float64 reference. Exits 77 (skipped)
# where there is no GPU. Usage: gpu-tests.sh [path/to/fa-jit]; with
# FA_GPU_TESTS_MATCH=REGEX only the cases whose arguments match it run,
# with FA_GPU_TESTS_FROM=N only the N-th of those and the ones after it (a
# run split in parts), and FA_GPU_TESTS_ARGS is added to every case's
# arguments (the suite under a non-default option).
set -uo pipefail
fajit=${1:-$(dirname "$0")/../../build/bin/fa-jit}

source "$(dirname "$0")/Inputs/probe.sh"
probe_gpu gpu-tests "$fajit"

passed=0 failed=0 seen=0
inputs=$(dirname "$0")/Inputs
run() {
  local out
  if [ -n "${FA_GPU_TESTS_MATCH:-}" ] && ! [[ "$*" =~ $FA_GPU_TESTS_MATCH ]]; then
    return
  fi
  seen=$((seen + 1))
  if [ "$seen" -lt "${FA_GPU_TESTS_FROM:-1}" ]; then
    return
  fi
  # shellcheck disable=SC2086 # FA_GPU_TESTS_ARGS is a list of arguments
  set -- "$@" ${FA_GPU_TESTS_ARGS:-}
  if out=$("$fajit" --target=auto --check "$@" 2>&1) && [[ "$out" == *" on sm_"* ]]; then
    passed=$((passed + 1))
    echo "PASS: $* | $(echo "$out" | grep -E 'rel_err' | tr '\n' ' ')"
  else
    failed=$((failed + 1))
    echo "FAIL: $*"
    echo "$out" | sed 's/^/    /'
  fi
}

# Cases of sm_90a's kernels only.
sm90a=0
[[ "$gpu_ptx" == *".target sm_90a"* ]] && sm90a=1
run_sm90a() {
  if [ "$sm90a" = 1 ]; then run "$@"; fi
}

for dtype in bf16 f16; do
  for d in 64 80 96 128 192 256; do
    run --dtype=$dtype --shape=2,4,4,257,257,$d --lse
    run --dtype=$dtype --shape=1,8,2,100,333,$d --causal=bottom-right --lse
    run --dtype=$dtype --shape=1,4,1,1000,77,$d --causal=top-left --lse
  done
  run --dtype=$dtype --shape=3,2,2,17,17,32 --lse
  run --dtype=$dtype --shape=1,2,2,1,1,64 --lse
  run --dtype=$dtype --shape=1,4,4,300,300,64 --window=32,8 --lse
  run --dtype=$dtype --shape=1,4,4,300,300,128 --softcap=20 --lse
  run --dtype=$dtype --shape=2,4,4,4096,4096,128 --causal=bottom-right
  run --dtype=$dtype --shape=1,4,4,64,200,64 --causal=bottom-right --lse
  run --dtype=$dtype --shape=1,2,2,200,64,64 --causal=bottom-right --lse
done
# D = 256: a window with softcap, and the scored path.
run --dtype=bf16 --shape=1,4,2,300,300,256 --window=32,8 --softcap=20 --lse
run --dtype=f16 --shape=2,4,2,129,257,256 --alibi --bias --causal=bottom-right --lse

# fa-bounded-softmax's fixed offset (bounded scores: bf16 softcap <= 54, f16
# <= 5.5): rows with no key (bottom-right, Nq > Nk), ragged tiles, GQA,
# softcap 50, scores saturated at both ends (scale 2), f16's cap 4, the
# persistent grid, scores pressed against one end of their range, and the
# running max kept (fwd-bounded-softmax=false, and f16 at cap 20 above).
run --dtype=bf16 --shape=2,4,2,1000,777,64 --softcap=30 --causal=bottom-right --lse
run --dtype=bf16 --shape=1,4,4,333,1500,256 --softcap=50 --lse
run --dtype=bf16 --shape=1,4,4,300,300,128 --softcap=30 --scale=2 --lse
run --dtype=f16 --shape=1,4,4,300,300,128 --softcap=4 --lse
run --dtype=bf16 --shape=2,4,4,500,300,64 --softcap=30 --causal=top-left --lse \
  --fwd-persistent=always --persistent-ctas=3
run "$inputs/softcap-saturated.mlir" --shape=2,4,4,300,200,128
run --dtype=bf16 --shape=1,4,4,300,300,128 --softcap=30 --lse --fwd-bounded-softmax=false

# Causal grids in groups of 8 heads (D >= 128): 15 (head, batch) pairs (a
# group of 8, then 7), and 70000 heads (the folded grid, grouped).
run --dtype=bf16 --shape=3,5,1,1000,1000,128 --causal=bottom-right --lse
run --dtype=bf16 --shape=1,70000,70000,16,16,128 --causal=top-left
# A bias broadcast over the batch: the CTAs run batch fastest (on the folded
# grid of 70000 heads too).
run --dtype=bf16 --shape=2,70000,70000,24,24,64 --bias --causal=top-left
run --dtype=f16 --shape=3,9,3,300,200,128 --bias --lse

# D = 80 and 192 on the scored path (D = 80's 32-key tiles split their
# chunks unevenly over the CTA's copies).
run --dtype=f16 --shape=1,4,2,200,300,80 --softcap=20 --alibi --bias --lse
run --dtype=bf16 --shape=2,4,2,129,257,192 --softcap=20 --bias --causal=bottom-right --lse

# Head dims between wgmma's 64-column panels (32, 80, 96) on sm_90a: tiles
# padded with zero columns, TMA boxes per panel, the epilogue storing D; on
# each path (a producer with TMA or cp.async, wgmma without one, mma.sync),
# persistent, and with Dk != Dv.
run --dtype=bf16 --shape=2,8,2,300,257,32 --causal=bottom-right --lse
run --dtype=bf16 --shape=1,4,2,333,190,96 --causal=top-left --lse --fwd-warp-specialize=false
run --dtype=f16 --shape=1,4,2,333,190,80 --lse --fwd-tma=false
run --dtype=bf16 --shape=1,4,2,333,190,80 --lse --fwd-wgmma=false
run --dtype=bf16 --shape=4,32,8,1000,777,96 --lse
run --dtype=f16 --shape=4,32,8,1000,777,80 --lse --fwd-persistent=always
run --dtype=bf16 --shape=2,4,2,200,300,80,128 --causal=bottom-right --lse
run --dtype=f16 --shape=2,4,2,200,300,128,96 --window=40,8 --softcap=20 --lse

# Dk != Dv in the forward: DeepSeek's 192 / 128 on each path (a producer
# warpgroup, wgmma without one, mma.sync), causal GQA, ragged N, the scored
# path; 96 / 64, 256 / 128 (64-key tiles: 128 do not fit) and 64 / 128.
run --dtype=bf16 --shape=2,8,2,333,190,192,128 --causal=bottom-right --lse
run --dtype=f16 --shape=1,4,4,257,1000,192,128 --lse
run --dtype=bf16 --shape=1,4,2,200,300,192,128 --softcap=20 --alibi --bias --window=40,8 --lse
run --dtype=bf16 --shape=1,4,2,333,190,192,128 --causal=top-left --lse --fwd-warp-specialize=false
run --dtype=f16 --shape=1,4,2,333,190,192,128 --causal=top-left --lse --fwd-wgmma=false
run --dtype=f16 --shape=2,4,4,100,300,96,64 --causal=bottom-right --lse
run --dtype=bf16 --shape=1,4,2,333,190,256,128 --causal=bottom-right --lse
run --dtype=bf16 --shape=2,4,4,100,300,64,128 --dropout=0.1 --lse

# Persistent grids (fa-warp-specialize's persistent: by default without
# terms that read memory or draw random bits, causal, windows; `always`
# elsewhere): more work items
# than the SMs hold, so that each CTA runs
# several and the rings and Q's barriers go on from item to item; ragged N,
# GQA, lse, every head-dim class, the scored path (a full f32 bias too),
# dropout, a mask_mod without key ranges, and the same kernel without a
# persistent grid.
run --dtype=bf16 --shape=4,32,8,1000,777,128 --lse
run --dtype=f16 --shape=8,16,16,300,1000,64 --lse --fwd-persistent=always
run --dtype=bf16 --shape=2,64,16,1025,513,256 --lse --fwd-persistent=always
run --dtype=f16 --shape=4,16,4,500,400,192,128 --lse --fwd-persistent=always
run --dtype=bf16 --shape=4,16,4,700,300,128 --softcap=20 --alibi --bias --lse
run --dtype=f16 --shape=4,16,8,333,257,64 --dropout=0.1 --lse --fwd-persistent=always
run "$inputs/bias-full-f32.mlir" --shape=16,4,4,300,400,128
run "$inputs/mask-mod-blocks.mlir" --shape=16,4,4,1000,1100,128 --fwd-key-ranges=false
run --dtype=bf16 --shape=4,32,8,1000,777,128 --lse --fwd-persistent=never
# Causal (heavy and light tiles in pairs, the last rounds' tiles one by one
# sorted by work; an odd tile count runs the pad item) and windows (single
# tiles), items of different key counts, with few CTAs so that each carries
# the key tiles done across many items. The sorted tail: all of it (fewer
# pairs than CTAs), after two rounds of pairs with a part-empty third, at
# one CTA; and pairs throughout.
run --dtype=bf16 --shape=3,5,1,1000,1000,128 --causal=bottom-right --lse \
  --persistent-ctas=3
run --dtype=bf16 --shape=3,5,1,1000,1000,128 --causal=bottom-right --lse \
  --persistent-ctas=3 --fwd-causal-order=paired
run --dtype=bf16 --shape=2,11,11,1300,1300,192 --causal=top-left --lse
run --dtype=f16 --shape=4,11,11,2048,2048,64 --causal=bottom-right --lse
run --dtype=bf16 --shape=1,3,3,900,900,64 --causal=top-left --lse \
  --persistent-ctas=1
run --dtype=f16 --shape=5,3,3,300,300,64 --causal=top-left --lse \
  --persistent-ctas=3
run --dtype=bf16 --shape=2,4,4,1500,700,256 --causal=bottom-right --lse \
  --persistent-ctas=5
run --dtype=bf16 --shape=2,3,3,1000,1000,128 --window=100,20 --lse \
  --persistent-ctas=3
run --dtype=f16 --shape=3,2,1,700,900,64 --window=64,0 --causal=top-left \
  --lse --fwd-persistent=always --persistent-ctas=3
run --dtype=bf16 --shape=2,4,2,1000,700,32 --window=64,8 --causal=bottom-right \
  --lse --persistent-ctas=3
# Wide K/V tiles (sm_90a's producer warpgroup; explicit widths run only
# there, other chips refuse them): the defaults (192 keys at D = 64, 80 at
# 256, 112 at 192) over key counts that are not multiples of them, few
# CTAs, and widths no default takes (176 at D = 128), causal and windowed.
run --dtype=bf16 --shape=2,4,2,1000,1777,64 --persistent-ctas=3
run_sm90a --dtype=f16 --shape=2,3,3,777,1500,128 --block-kv=176 \
  --persistent-ctas=3
run --dtype=bf16 --shape=2,4,4,1000,1300,256 --persistent-ctas=5
run --dtype=bf16 --shape=2,3,3,1000,1300,192 --window=300,40 --lse
run_sm90a --dtype=f16 --shape=2,4,2,1000,1700,128 --block-kv=144 \
  --causal=bottom-right --lse
run_sm90a --dtype=bf16 --shape=3,3,3,900,900,64 --block-kv=224 \
  --causal=top-left --persistent-ctas=3
# Terms of the position persistent (ALiBi, a relative-position score_mod):
# each item's positions from its own coordinates.
run --dtype=bf16 --shape=3,4,2,700,900,64 --alibi --causal=bottom-right --lse \
  --fwd-persistent=always --persistent-ctas=3
run --dtype=f16 --shape=2,4,4,500,300,128 --alibi --bias --lse \
  --fwd-persistent=always --persistent-ctas=3
run "$inputs/score-mod-relpos.mlir" --shape=2,4,2,700,900,64 \
  --fwd-persistent=always --persistent-ctas=3

# Every forward tile configuration fa-jit offers (--block-q, --block-kv;
# bench/fwd_tile_sweep.sh): ragged N, both causal alignments, GQA, lse.
for tile in 32:128x64 64:128x64 64:128x32 64:64x64 64:64x128 96:64x64 \
  96:64x32 96:128x32 128:64x64 128:64x32 128:64x128 128:128x32 256:64x32 \
  256:64x64; do
  d=${tile%%:*} t=${tile#*:}
  run --dtype=bf16 --shape=1,4,2,333,190,$d --causal=bottom-right --lse \
    --block-q=${t%x*} --block-kv=${t#*x}
  run --dtype=f16 --shape=1,2,1,190,333,$d --causal=top-left --lse \
    --block-q=${t%x*} --block-kv=${t#*x}
done
run --dtype=bf16 --shape=1,4,4,300,300,128 --window=40,8 --softcap=20 \
  --block-q=128 --block-kv=32 --lse

# K and V double-buffered (--kv-stages=2): ragged N, both causal
# alignments, GQA, a window, the scored path, D = 64 to 256.
for tile in 64:128x64 128:64x128 128:64x64 128:128x32 256:64x32; do
  d=${tile%%:*} t=${tile#*:}
  run --dtype=bf16 --shape=1,4,2,333,190,$d --causal=bottom-right --lse \
    --block-q=${t%x*} --block-kv=${t#*x} --kv-stages=2
  run --dtype=f16 --shape=2,2,1,190,333,$d --causal=top-left --lse \
    --block-q=${t%x*} --block-kv=${t#*x} --kv-stages=2
done
run --dtype=bf16 --shape=1,4,4,300,300,128 --window=40,8 --softcap=20 --lse --kv-stages=2
run --dtype=f16 --shape=2,4,2,129,257,64 --alibi --bias --dropout=0.1 --causal=bottom-right --lse --kv-stages=2

# Deeper rings (--kv-stages=3, 4; fa-async-copy): ragged N with more tiles
# than stages and fewer, both causal alignments, a window, the scored path.
for stages in 3 4; do
  run --dtype=bf16 --shape=1,4,2,333,650,64 --causal=bottom-right --lse --kv-stages=$stages
  run --dtype=f16 --shape=2,2,1,650,100,64 --causal=top-left --lse --kv-stages=$stages
  run --dtype=bf16 --shape=1,4,4,300,700,128 --window=200,8 --softcap=20 --lse \
    --block-q=64 --block-kv=64 --kv-stages=$stages
  run --dtype=f16 --shape=2,4,2,129,457,64 --alibi --bias --dropout=0.1 --causal=bottom-right --lse --kv-stages=$stages
done

# Scores as large as +-1e4 stay finite.
run --dtype=bf16 --shape=1,2,2,128,128,64 --scale=150 --lse

# The scored path: ALiBi, bias, score_mod, mask_mod (odd N, GQA, causal).
run --dtype=bf16 --shape=2,8,2,129,257,64 --alibi --causal=bottom-right --lse
run --dtype=f16 --shape=2,4,4,100,100,96 --bias --alibi --softcap=20 --window=40,8 --lse
run "$inputs/alibi-batch-gqa.mlir" --shape=3,4,2,77,131,64
run "$inputs/bias-full-f32.mlir" --shape=2,4,4,129,200,128
run "$inputs/bias-bcast-bf16.mlir" --shape=2,4,1,150,150,64
run "$inputs/score-mod-all.mlir" --shape=2,4,2,77,301,128
run "$inputs/mask-mod-docs.mlir" --shape=1,4,2,200,333,64
# Key ranges (fa-key-ranges): tiles skipped before and after each query
# tile's keys, ragged N, and query tiles that see no key; the same kernel
# without them.
run "$inputs/mask-mod-docs.mlir" --shape=2,4,2,1000,1300,64
run "$inputs/mask-mod-blocks.mlir" --shape=2,4,4,1000,1100,128
run "$inputs/mask-mod-blocks.mlir" --shape=1,4,4,1000,1100,128 --fwd-key-ranges=false
# More key chunks (of 128 keys, a key-range CTA each) than B x Hq: no
# chunk may be taken for a folded grid's spare CTA.
run "$inputs/mask-mod-docs.mlir" --shape=1,4,2,300,5000,64
# Full key tiles (no mask_mod there): runs that differ between rows, rows
# with full tiles that are no run, a hidden tile inside the visited range.
run "$inputs/mask-mod-runs.mlir" --shape=2,4,4,1000,1100,64
run "$inputs/mask-mod-runs.mlir" --shape=1,4,4,333,1500,64 --block-q=64 --block-kv=32
run "$inputs/score-mod-relpos.mlir" --shape=2,4,2,190,333,64

# Dropout (the scored path with Philox per probability; --check's reference
# draws the same stream from --seed): ragged N, GQA, causal, window, with
# bias and ALiBi, D = 64 and 128.
run --dtype=bf16 --shape=2,4,2,129,200,64 --dropout=0.2 --causal=bottom-right --lse
run --dtype=f16 --shape=1,4,4,300,257,128 --dropout=0.1 --window=40,8 --lse --seed=3
run --dtype=bf16 --shape=2,4,2,100,150,128 --dropout=0.5 --bias --alibi --causal=top-left --lse --seed=11

# The scored backward (fa-jit --backward: the forward's terms, dBias by the
# fourth kernel): a full [1, Hq, Nq, Nk] bias and [B, 1, Nq, Nk] (head sums,
# backward-dbias.mlir), broadcast biases, ALiBi, score_mod, mask_mod. Biases
# broadcast over keys ([.., 1]: row or total sums) are covered by
# FACudaBackwardTests: their dBias is exactly 0 (softmax is shift-invariant),
# which --check's relative error cannot judge.
run --backward --dtype=f16 --shape=2,4,4,100,100,96 --bias --dbias --alibi --window=40,8
run --backward --dtype=f16 --shape=2,4,4,100,100,96 --bias --dbias --alibi --window=40,8 --bwd-atomic-dq
run --backward --dtype=bf16 --shape=2,8,2,1000,1000,128 --causal=bottom-right --bwd-atomic-dq
run --backward --dtype=f16 --shape=1,4,4,513,257,64 --bwd-atomic-dq
# The dK/dV kernel's warps: 8 on the deterministic path, 4 with atomic dQ
# (sm_90a's atomic default is 8); atomic dQ's 8 warps with mma.sync instead
# of wgmma.
run --backward --dtype=bf16 --shape=2,8,2,1000,1000,128 --bwd-dkdv-warps=8 --bwd-deterministic
run --backward --dtype=f16 --shape=1,4,4,513,257,64 --bwd-atomic-dq --bwd-dkdv-warps=4
run --backward --dtype=bf16 --shape=2,8,2,1000,1000,128 --causal=top-left --bwd-atomic-dq --bwd-wgmma=false
run --backward --dtype=bf16 --shape=2,4,2,513,1000,64 --window=100,30 --bwd-atomic-dq --bwd-wgmma=false
# N = 4096 against float64: many K/V tiles reducing into each dQ row.
# The default on sm_90a there is atomic dQ (wgmma); --bwd-deterministic the
# dq kernel.
run --backward --dtype=bf16 --shape=1,2,1,4096,4096,128 --causal=bottom-right --bwd-atomic-dq
run --backward --dtype=bf16 --shape=1,2,2,4096,4096,64
run --backward --dtype=bf16 --shape=1,2,2,4096,4096,64 --bwd-deterministic
run --backward --dtype=f16 --shape=1,2,1,4096,4096,128 --bwd-deterministic
run --backward --dtype=bf16 --shape=1,4,2,77,150,128 --bias --dbias --causal=bottom-right
run --backward --dtype=bf16 --shape=2,8,2,129,257,64 --alibi --causal=bottom-right
run --backward "$inputs/bias-full-f32.mlir" --shape=2,4,4,129,200,128 --dbias
run "$(dirname "$0")/../fa-jit/Inputs/backward-dbias.mlir"
run --backward "$inputs/bias-bcast-bf16.mlir" --shape=2,4,1,150,150,64 --dbias
run --backward "$inputs/alibi-batch-gqa.mlir" --shape=3,4,2,77,131,64
run --backward "$inputs/score-mod-all.mlir" --shape=2,4,2,77,301,128
run --backward "$inputs/mask-mod-docs.mlir" --shape=1,4,2,200,333,64

# The backward with dropout (the forward's Philox stream from --seed), in
# both dQ modes (the dq kernel, the default, and --bwd-atomic-dq).
run --backward --dtype=bf16 --shape=2,4,2,129,200,64 --dropout=0.2 --causal=bottom-right --seed=3 --bwd-atomic-dq
run --backward --dtype=f16 --shape=1,4,4,300,257,128 --dropout=0.1 --window=40,8 --seed=5
run --backward --dtype=bf16 --shape=2,4,2,100,150,96 --dropout=0.5 --bias --dbias --alibi --causal=top-left --seed=11

# The backward at D = 256 (dK and dV in two passes of 128 columns): causal
# GQA, window + softcap with atomic dQ, the scored path with dBias and
# dropout.
run --backward --dtype=bf16 --shape=2,4,2,257,300,256 --causal=bottom-right
run --backward --dtype=f16 --shape=1,4,4,300,200,256 --window=40,8 --softcap=20 --bwd-atomic-dq
run --backward --dtype=bf16 --shape=1,4,2,129,190,256 --bias --dbias --alibi --dropout=0.1 --seed=7

# The backward at D = 80 and 192: causal GQA, window + softcap (192 with
# atomic dQ, which D = 80 does not fit), the scored path with dBias and
# dropout.
run --backward --dtype=bf16 --shape=2,4,2,257,300,80 --causal=bottom-right
run --backward --dtype=bf16 --shape=2,4,2,257,300,192 --causal=bottom-right
run --backward --dtype=f16 --shape=1,4,4,300,200,192 --window=40,8 --softcap=20 --bwd-atomic-dq
run --backward --dtype=f16 --shape=1,4,4,300,200,80 --window=40,8 --softcap=20
run --backward --dtype=bf16 --shape=1,4,2,129,190,80 --bias --dbias --alibi --dropout=0.1 --seed=7
run --backward --dtype=bf16 --shape=1,4,2,129,190,192 --bias --dbias --alibi --dropout=0.1 --seed=7
# Dv < D (V and dO zero past Dv in the kernels' tiles): DeepSeek's 192 / 128
# in each dQ mode and on the scored path, 256 / 128, 128 / 64 (the dq kernel
# and atomic dQ), 96 / 64.
run --backward --dtype=bf16 --shape=2,8,2,333,190,192,128 --causal=bottom-right
run --backward --dtype=f16 --shape=1,4,4,257,300,192,128 --window=40,8 --softcap=20 --bwd-atomic-dq
run --backward --dtype=bf16 --shape=1,4,2,129,190,192,128 --bias --dbias --alibi --dropout=0.1 --seed=7
run --backward --dtype=bf16 --shape=1,4,2,129,190,256,128 --causal=bottom-right
run --backward --dtype=bf16 --shape=2,4,2,200,300,128,64 --causal=top-left
run --backward --dtype=f16 --shape=2,4,2,200,300,128,64 --bwd-atomic-dq
run --backward --dtype=bf16 --shape=1,4,4,100,300,96,64 --bwd-deterministic

# Captures (document ids, a per-head table), forward and backward: ids of
# exactly N tokens (ragged tiles read them clamped in range), and more ids
# than Nq and Nk use.
caps=$(mktemp -d)
util=$(dirname "$0")/../fa-jit/Inputs/captures_util.py
mkdir -p "$caps/77" "$caps/400"
python3 "$util" gen "$caps/77" --shape=1,4,77,8 --seed=3 &&
  python3 "$util" gen "$caps/400" --shape=1,4,400,8 --seed=4 || echo "FAIL: captures_util.py gen"
for n in 77 400; do
  c="--captures=$caps/$n/doc.npy,$caps/$n/tab.npy"
  run "$inputs/captures-docs.mlir" --shape=2,4,2,77,77,64 "$c"
  run "$inputs/captures-docs.mlir" --shape=2,4,2,77,77,64 "$c" --backward
done
run "$inputs/captures-docs.mlir" --shape=1,4,2,200,333,64 \
  "--captures=$caps/400/doc.npy,$caps/400/tab.npy"
run "$inputs/captures-docs.mlir" --shape=1,4,2,200,333,64 \
  "--captures=$caps/400/doc.npy,$caps/400/tab.npy" --backward

# The kernel cache: a second process finds the kernel on disk.
cache=$(mktemp -d)
first=$(FA_CACHE_DIR=$cache "$fajit" --target=auto --shape=1,2,2,64,64,64 --dtype=bf16 2>&1)
second=$(FA_CACHE_DIR=$cache "$fajit" --target=auto --shape=1,2,2,64,64,64 --dtype=bf16 2>&1)
rm -rf "$cache" "$caps"
echo "cache, first process:  $(echo "$first" | grep -o 'compile=[^ ]* ([a-z]*)')"
echo "cache, second process: $(echo "$second" | grep -o 'compile=[^ ]* ([a-z]*)')"
if [[ "$first" == *"(compiled)"* && "$second" == *"(cached)"* ]]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL: kernel cache"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
