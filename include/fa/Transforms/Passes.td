//===- Passes.td - FA transformation passes -----------------*- tablegen -*-===//

#ifndef FA_TRANSFORMS_PASSES_TD
#define FA_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FADecompose : Pass<"fa-decompose"> {
  let summary = "Lower fa.attention to the materialized reference in linalg";
  let description = [{
    Rewrites every `fa.attention` into linalg on tensors exactly as the op
    defines it: the full `[B, Hkv, G, Nq, Nk]` score tensor (QK^T in f32),
    scale, softcap, ALiBi, bias, `score_mod`, masks, a numerically stable
    softmax in f32 (row max, exp, row sum), the product with V and the
    log-sum-exp. Query heads are regrouped as `[Hkv, G]` with
    `G = Hq / Hkv` so GQA/MQA need no gather.

    This is the executable specification other lowerings are checked
    against; it is O(Nq * Nk) in memory and not meant to be fast.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FATile : Pass<"fa-tile"> {
  let summary = "Tile fa.attention into Q tiles (parallel) and K/V tiles "
                "(sequential)";
  let description = [{
    Rewrites every `fa.attention` into an `scf.forall` over (batch, query
    head, Q tile of `block-q` rows) whose body loops over K/V tiles of
    `block-kv` rows. Scores of a tile pair are an `fa.score_tile`. The
    softmax across K/V tiles is still the safe two-pass one: a loop that
    takes the row max (`fa.softmax_row_max`), then a loop that sums
    `exp(s - max)` and accumulates P V (`fa.softmax_row_sum`); each
    recomputes the scores, so nothing larger than a tile is stored.
    `fa-online-softmax` fuses the two loops.

    Causal and window masks narrow the K/V loop per Q tile, so tiles that
    are entirely masked are never visited. Last tiles are ragged: a tile
    holds `min(block, N - offset)` rows.
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"64",
           "Key/value rows per tile">
  ];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FAOnlineSoftmax : Pass<"fa-online-softmax"> {
  let summary = "Fuse the two softmax passes of fa-tile into one online pass";
  let description = [{
    Replaces each pair of `fa.softmax_row_max` / `fa.softmax_row_sum` loops
    by a single loop over K/V tiles carrying the running max m, the running
    sum l and the accumulator: per tile, `m' = max(m, rowmax(s))`,
    `alpha = e^(m - m')` (with m' = 0 while it is still -inf),
    `p = e^(s - m')`, `l' = alpha * l + rowsum(p)`, `acc' = alpha * acc +
    p V`. Scores are computed once per tile instead of twice. `e` is the
    exponential the row-max loop's attribute names: `exp` on the host's
    linalg tensors, `exp2` in the GPU kernels' fagpu register tiles (whose
    max is in the log2 domain; there m' is the row-max loop's own update,
    and `fagpu.scale_rows` rescales).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FABoundedSoftmax : Pass<"fa-bounded-softmax"> {
  let summary = "A fixed softmax offset where the scores are bounded";
  let description = [{
    Runs between `fa-tile` and `fa-online-softmax` on GPU kernels. Where a
    row-sum loop's scores are bounded, `s` in `[lo, hi]` (a range found
    from the constants through `fagpu.map` bodies, masks and branches:
    softcap's `cap * tanh(x)`, or a `score_mod` of that form), and
    `e^((hi - lo) / 2)` in the log2 domain stays within 5/8 of the
    exponent range of P's element type (bf16: a softcap up to 54; f16: up
    to 5.5), the row-max loop is replaced by the constant `(lo + hi) / 2`
    (times the loop's log2 scale). The kernel then has one loop over K/V
    with no row max and no rescale, and its row sum adds P rounded as P V's
    operand holds it (`fagpu.update_row_sum ... rounded`), so a row with
    one key gets that key's V exactly. Masked scores (-inf) are 0 under any
    offset. P's exponent `c s - offset` then moves into the score's
    `fagpu.map`, its constant multiplies and adds folded (softcap: one
    constant times the tanh). Other kernels are left as they are.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FADifferentiateScoreMod : Pass<"fa-differentiate-score-mod"> {
  let summary = "Derive d score_mod / d score for fa.attention_grad";
  let description = [{
    Fills the `score_mod_grad` region of every `fa.attention_grad` that has
    a `score_mod` and no `score_mod_grad` yet, by forward-mode
    differentiation of the region's ops with respect to its score argument
    (the index arguments carry no derivative). The region recomputes the
    values it needs and yields the derivative.

    Differentiable: arith addf, subf, mulf, divf, negf, maximumf, minimumf,
    maxnumf, minnumf, select, extf, truncf; math exp, exp2, expm1, log,
    log2, log1p, tanh, sqrt, rsqrt, absf, sin, cos, erf, powf, fma; floor,
    ceil, round and integer/comparison ops have no derivative (0). Any other
    op that depends on the score is an error naming it.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect"
  ];
}

def FATileGrad : Pass<"fa-tile-grad"> {
  let summary = "Tile fa.attention_grad: recompute P from the lse, tile by "
                "tile";
  let description = [{
    Rewrites every `fa.attention_grad` into three steps on tensors, none of
    which stores an Nq x Nk value:

    1. `Dsum[b, h, i] = sum_e dO[b, h, i, e] * O[b, h, i, e]` (f32);
    2. an `scf.forall` over (batch, kv head, K/V tile of `block-kv` rows)
       that keeps the tile's dK and dV accumulators (f32) and loops over the
       query heads of its GQA group and the Q tiles of `block-q` rows that
       can see the tile (causal/window skipping): scores and their
       derivative from an `fa.score_tile`, `P = exp(s - lse)`,
       `dV += P^T dO`, `dP = dO V^T`, `dS = P * (dP - Dsum) * ds/ddot`,
       `dK += dS^T Q`;
    3. an `scf.forall` over (batch, query head, Q tile) that recomputes the
       same tiles and accumulates `dQ += dS K`.

    dQ is written by its own step rather than accumulated with atomics, so
    the result is deterministic. A `score_mod` needs its `score_mod_grad`
    region (`fa-differentiate-score-mod`). Dropout multiplies P (for dV)
    and dP by the forward's factors (the same Philox stream).
  }];
  let options = [
    Option<"blockQ", "block-q", "int64_t", /*default=*/"64",
           "Query rows per tile">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"64",
           "Key/value rows per tile">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FAHostParallel : Pass<"fa-host-parallel", "::mlir::func::FuncOp"> {
  let summary = "Share the iterations of a host function's scf.forall loops "
                "among concurrent calls of it (worker threads)";
  let description = [{
    On bufferized functions (memrefs): turns each `scf.forall` directly in
    the function body into a loop that claims its iterations one at a time
    from an atomic counter, `memref.atomic_rmw addi` on a new last argument
    `memref<N x i64>` (N = the number of such loops, zero-filled by the
    caller), and marks the function `fa.shared_loops = N`. Calling the
    function from T threads at once with the same arguments then runs each
    iteration exactly once, on whichever thread claims it; every thread
    also runs the code outside the loops, on its own allocations.

    The results are those of one sequential call, bit for bit, because a
    forall's iterations are independent and each is computed the same way
    on any thread. That holds only when code outside the loops writes no
    memory but the function's own allocations, no code after the first
    loop reads or writes memory (deallocations aside), and no loop reads or
    writes memory an earlier loop writes (there is no barrier between
    loops). A function that breaks a rule, or has no top-level forall, is
    left as it is (`scf-forall-to-for` runs it sequentially).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FAHostApproximateExp : Pass<"fa-host-approximate-exp"> {
  let summary = "Rewrite f32 math.exp into a polynomial that vectorizes "
                "(the host's softmax)";
  let description = [{
    Rewrites every f32 `math.exp` (scalar or vector) into MLIR's polynomial
    approximation (`populateMathPolynomialApproximationPatterns`, Cephes'
    exp: x = a + n ln 2 with n = round(x / ln 2), e^a by a degree-6
    polynomial, 2^n from the exponent bits; relative error below 2^-22.5,
    results below 2^-126 flushed to 0, exp(-inf) = 0, exp(0) = 1 exactly).
    The host lowers math.exp to a call of `expf` per element, which LLVM
    does not vectorize; the polynomial is arith and `math.fma` ops that
    vectorize with the softmax loops. Other types and math ops are left as
    they are.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FAHostRegisterTile : Pass<"fa-host-register-tile", "::mlir::func::FuncOp"> {
  let summary = "Compute the host's tile products (Q K^T, P V, the "
                "backward's) with register-blocked vector FMAs";
  let description = [{
    On bufferized functions (memrefs): rewrites each `linalg.generic` that
    is a contraction `C[m, n] += A . B` over one reduction dimension k (A
    read at (m, k) or (k, m), B at (k, n) or (n, k), any float type up to
    f32 extended to f32, C f32 with unit stride in its last dimension, the
    body exactly `out + ext(a) * ext(b)`) into a GEMM micro-kernel. B is
    packed into a new f32 [K, N] buffer: a vector at a time where its rows
    are contiguous (checked at run time where the stride is dynamic; at
    (n, k) with K a multiple of `lanes`, by `lanes` x `lanes` transposes
    in registers), element by element otherwise. Each
    block of `rows` x `cols` elements of C then stays in
    `rows * cols / lanes` vector registers while the K loop broadcasts one
    element of A per row and adds its product with `cols / lanes` vectors
    of B (`vector.fma`). The rows and columns the blocks leave go in blocks
    of fewer rows and vectors (half the block, then one). A `linalg.fill`
    of C right before an in-order contraction becomes the blocks' initial
    value.
    Where N is not a multiple of `lanes` at run time, the fill and the
    contraction run as they were (an `scf.if`). The sum over k is in order,
    one fused multiply-add per term; where the sum is `reassoc` (Q K^T,
    dO V^T), in chunks of 16 terms, each summed from zero and added to C in
    order, which keeps its rounding error near that of the vectorized
    reduction the loops had.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"4",
           "Rows of C per register block">,
    Option<"cols", "cols", "int64_t", /*default=*/"16",
           "Columns of C per register block (a multiple of lanes)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"8",
           "f32 lanes per vector (8: AVX2)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def FAFuse : Pass<"fa-fuse", "::mlir::ModuleOp"> {
  let summary = "Outline each fa.attention into one GPU kernel and its launch";
  let description = [{
    Moves every `fa.attention` outside a kernel into a `gpu.func` kernel of
    the `gpu.module @fa_kernels` (created with an NVVM target for `chip`),
    so that the whole forward (loads, Q K^T, the variant's terms and masks,
    the online softmax, dropout, P V, the stores of O and lse) is one
    kernel. The kernel takes memrefs (rows contiguous, any other strides)
    of the op's tensors and of its results, reads them with
    `bufferization.to_tensor` and writes O and lse with
    `bufferization.materialize_in_destination`; the op itself moves inside
    unchanged, for `convert-fa-to-nvvm` to emit.

    The host keeps a `gpu.launch_func` in its place: inputs as buffers, O
    and lse allocated, a grid of (ceil(Nq / block-q), Hq, B) CTAs of 128
    threads (no launch when it is empty) and the dynamic shared memory of a
    single K/V stage (`fa-async-copy` sets the depth). The tile is recorded
    on the kernel as `fa.block_q` and `fa.block_kv`.

    Default tiles (block-q x block-kv): 128 x 64 for D <= 64; 64 x 64 for
    D = 96; 64 x 128 for D = 128 with causal or window masks, else 128 x 64;
    64 x 64 for D = 256; the scored path (ALiBi, bias, score_mod, mask_mod,
    dropout) 64 x 64 for D <= 64, else 64 x 32.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_80\"",
           "Target chip of the kernel module (sm_80, sm_90a, ...)">,
    Option<"blockQ", "block-q", "int64_t", /*default=*/"0",
           "Query rows per CTA, 64 or 128 (one or two m-tiles of 16 rows "
           "per warp); 0: the default for the variant">,
    Option<"blockKV", "block-kv", "int64_t", /*default=*/"0",
           "Rows of the K/V tiles the loop visits, 32, 64 or 128 (a "
           "warp-specialized wgmma kernel of 128 query rows: any multiple of "
           "16 from 80 to 224); "
           "0: the default for the variant">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"true",
           "On a chip with wgmma (sm_90a), mark kernels whose head dim is a "
           "multiple of 64 `fa.wgmma` (with their own default tiles and one "
           "warp per 16 query rows): fa-tile then multiplies with warpgroup "
           "MMAs. false: mma.sync everywhere">,
    Option<"warpSpecialize", "warp-specialize", "bool", /*default=*/"false",
           "Mark wgmma kernels of the plain path `fa.warp_specialize`, with "
           "the tiles of a producer warpgroup (128 query rows): "
           "fa-warp-specialize then gives them one">,
    Option<"headGroup", "head-group", "int64_t", /*default=*/"0",
           "Under a causal mask, run the heaviest query tiles of this many "
           "(head, batch) pairs before the lighter ones (`fa.head_group`); "
           "1: one head's tiles heavy to light; 0: the default for the "
           "variant">,
    Option<"exp2Fma", "exp2-fma", "int64_t", /*default=*/"-1",
           "Of every 8 exponentials of P a thread computes, this many by a "
           "polynomial on the FMA pipe instead of the MUFU's ex2 "
           "(`fa.exp2_fma`); -1: the default for the variant">,
    Option<"tanhFma", "tanh-fma", "int64_t", /*default=*/"-1",
           "Of every 8 tanh values a thread computes, this many take their "
           "reciprocal from Newton steps on the FMA pipe instead of the "
           "MUFU's rcp (`fa.tanh_fma`); -1: the default for the variant">,
    Option<"biasTiles", "bias-tiles", "bool", /*default=*/"false",
           "fa-bias-tiles will read a bias from shared memory: a bias "
           "kernel of the producer warpgroup takes the widest key tile whose "
           "bias blocks fit beside K and V">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def FAKeyRanges : Pass<"fa-key-ranges", "::mlir::ModuleOp"> {
  let summary = "Bound each forward kernel's key loop by the key tiles its "
                "mask_mod keeps";
  let description = [{
    For every forward kernel `fa-fuse` outlined whose `fa.attention` has a
    `mask_mod` that reads neither `b` nor `h` (so every batch and head sees
    the same keys), adds a key-range kernel `<forward>_key_ranges` to the
    kernel module: one CTA of 4 warps per query tile and chunk of 128 keys
    (`fagpu.key_chunk`) evaluates the `mask_mod` on the chunk's K tiles of
    128 keys that the causal and window masks leave and merges with atomics,
    per warp, the first and last K tile where one of its rows keeps a key,
    and the run of K tiles where all its rows keep every key
    (`fagpu.merge_key_range`; the layout is KernelAbi.h's "Key ranges"). A
    CTA a query tile walking all its key tiles took 22 us at N = 2048 and 84
    us at N = 8192 before a 176 / 359 us forward (H200, D = 128).
    The forward kernel takes those ranges as a last argument (role
    `key_ranges`), which `fa-tile` hands to its `fagpu.visible_keys` (the
    forward loop then starts at the first such tile and ends after the
    last) and `fagpu.full_keys` (the forward evaluates the mask_mod only on
    tiles outside the run). Each launch of the forward gets an allocation
    of the ranges, zeroed (`gpu.memset`), and a launch of the key-range
    kernel before it.

    A document mask of 4 documents leaves a query tile about a quarter of
    the keys, most of them in tiles of one document, which need no mask.
    The ranges are contiguous: tiles the mask_mod hides between the first
    and last visible one are still visited (and masked).
  }];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FAAsyncCopy : Pass<"fa-async-copy", "::mlir::ModuleOp"> {
  let summary = "Choose the cp.async pipeline depth of each forward kernel's "
                "K/V tiles";
  let description = [{
    Sets `fa.kv_stages` on every forward kernel `fa-fuse` outlined, and the
    dynamic shared memory of its launches to match: the Q tile and, per
    stage, a K and a V tile.

    - 1 stage is FlashAttention-2's schedule: one K and one V buffer; V(n)
      is copied during S = Q K(n)^T and K(n + 1) during the softmax and
      P V(n), with two barriers per tile.
    - S > 1 stages are a ring: tiles n + 1 .. n + S - 1 are in flight while
      tile n is computed (each tile's K and V one cp.async group), with one
      barrier per tile.

    By default, 2 stages for the plain path's 128 x 64 tiles up to D = 128
    (measured faster on the H100), else 1. Stages past 4, or more than the
    chip gives one CTA in shared memory, are an error naming both.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "K/V stages, 1 to 4; 0: the default for the kernel's tile">
  ];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect"
  ];
}

def FABiasTiles : Pass<"fa-bias-tiles", "::mlir::ModuleOp"> {
  let summary = "Copy each K/V tile's bias block into shared memory beside K, "
                "for the scores' map to read from there";
  let description = [{
    In every forward kernel that fa-fuse marked for a producer warpgroup
    (`fa.warp_specialize`, wgmma), the scores' map's read of the bias, one
    global load a score at (row, key) clamped into [0, Nq) x [0, Nk),
    becomes a copy of the K/V tile's [block_q, block_kv] bias block into a
    shared tile in the 128-byte swizzle (`fagpu.copy` with a column, after
    V's copy) and a `fagpu.load_tile` of it in the accumulator's layout,
    which the map takes as an input. fa-warp-specialize rings the copy with
    K's: TMA boxes on K's barriers. Rows past Nq and keys past Nk read zeros
    (never stored, and masked). Kernels whose bias is read otherwise are
    left as they are.
  }];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::gpu::GPUDialect"
  ];
}

def FAWarpSpecialize : Pass<"fa-warp-specialize", "::mlir::ModuleOp"> {
  let summary = "Give each wgmma forward kernel's K/V copies a producer "
                "warpgroup of its own";
  let description = [{
    FlashAttention-3's warp specialization, on fa-tile's forward kernels
    that multiply with wgmma and that fa-fuse marked `fa.warp_specialize`
    (its `warp-specialize` option; before `fa-async-copy`, which then
    leaves them alone): a `fagpu.warp_specialize` whose producer (one more
    warpgroup, few registers) copies Q and then K(n), V(n) of every tile
    into rings of `stages` buffers, and whose consumers (the kernel's own
    warpgroups, the registers the producer gave up) run the loop. Each
    stage has mbarriers: K and V "full" (the producer's copies signal them)
    and K and V "empty" (every consumer thread arrives after the last
    product that reads the stage); the producer waits for "empty" before
    refilling a stage, the consumers for "full" before reading it. Neither
    role passes a CTA barrier.

    With `tma` (the default), where every tile is in wgmma's 128-byte
    swizzle with a multiple of 64 columns, the copies are `bulk`: one
    producer thread issues each tile as TMA copies that count their bytes
    on the full barrier (one arrival), instead of 128 threads' cp.async.

    With `pingpong` (the default) and two or more consumer warpgroups, they
    take turns at the tensor cores (`fagpu.take_turn` / `fagpu.pass_turn`):
    a turn is P V(n) and the start of S(n + 1) = Q K(n + 1)^T, so that one
    warpgroup's softmax runs under the other's products (FlashAttention-3's
    ping-pong).

    With `overlap`, the consumers' loop is rotated as fa-overlap-softmax
    rotates fa-async-copy's: S(n + 1) and P V(n) start together, and the
    softmax of tile n + 1 runs while P V(n) does (a turn, with `pingpong`,
    is then the issue of both).

    With `persistent` (`auto`, the default: kernels whose `fagpu.map`s
    neither read memory nor draw random bits, such as softcap and ALiBi,
    where it measured faster or level, not bias, captures or dropout, nor
    where ptxas spilled: a causal mask at D = 128 with one consumer
    warpgroup, a window with terms of the position at D = 256; `always`,
    also those; `never`), where every query tile visits the same
    keys or where a causal mask or a window alone tells them apart (and
    where key ranges do, a document mask's, one tile an item: by default up
    to D = 64 without a causal mask or window, captures included, with
    `always` everywhere), the kernel is
    persistent: `fagpu.work_slot` places the CTA, both roles loop over its
    work items (`fagpu.block_coords of %item`; causal, `{paired}`: a heavy
    and a light tile a pair, the pairs round robin), the rings' stages and
    parities run on across items (carried as the tiles done where items
    differ), and Q has an "empty" barrier too, so that the producer copies
    the next item's Q and K/V while the consumers finish the current one.

    Other kernels (mma.sync, unmarked) are left as they are.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "K/V stages, 1 to 4; 0: the default for the kernel's tile">,
    Option<"tma", "tma", "bool", /*default=*/"true",
           "Copy with TMA where the tiles allow">,
    Option<"pingpong", "pingpong", "bool", /*default=*/"true",
           "Consumer warpgroups take turns at the tensor cores">,
    Option<"overlap", "overlap", "bool", /*default=*/"true",
           "Rotate the consumers' loop: each tile's softmax under the "
           "previous tile's P V (fa-overlap-softmax's schedule)">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"auto\"",
           "A persistent grid where every query tile visits the same keys "
           "or where a causal mask or a window alone tells them apart (key "
           "ranges with always only; causal tiles go in heavy/light pairs): "
           "each CTA runs "
           "work items round robin and the producer copies the next item's "
           "Q and K/V under the current item's epilogue. auto: kernels "
           "whose terms read no memory and draw no random bits (softcap, "
           "ALiBi; not bias, captures, dropout); always; never">,
    Option<"causalOrder", "causal-order", "std::string",
           /*default=*/"\"tail\"",
           "How a persistent causal kernel's CTAs share the query tiles: "
           "paired (a heavy and a light tile of one head a pair, the pairs "
           "round robin) or tail (pairs for the full rounds but the last; "
           "the rest single tiles sorted by decreasing work, each round of "
           "the CTAs in the other direction; +1-17%, the most where pairs "
           "leave the last round part empty)">
  ];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect"
  ];
}

def FAOverlapSoftmax : Pass<"fa-overlap-softmax", "::mlir::ModuleOp"> {
  let summary = "Run each K/V tile's softmax under the previous tile's P V "
                "(wgmma forward kernels)";
  let description = [{
    Rotates the K/V loop of every forward kernel that multiplies with wgmma
    and rings its copies in two or more stages (after `fa-async-copy`), as
    FlashAttention-3's intra-warpgroup overlap: iteration n starts
    S(n) = Q K(n)^T and P(n - 1) V(n - 1) as `async` products, waits for
    S(n) alone (`fagpu.mma_wait` with one product pending), computes tile
    n's masks and softmax while the tensor cores run P V, then waits for
    P V and rescales the accumulator. Tile 0's scores and softmax are
    peeled before the loop (all under a test that there is a tile), the last
    P V follows it, and V's copies run one tile behind K's (tile n's group
    holds K(n) and V(n - 1)), so that V(n - 1)'s stage is refilled only
    after every thread has waited for its P V.

    Kernels with one K/V stage, and mma.sync kernels, are left as they are.
  }];
  let dependentDialects = [
    "::mlir::fagpu::FAGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect"
  ];
}

#endif // FA_TRANSFORMS_PASSES_TD
