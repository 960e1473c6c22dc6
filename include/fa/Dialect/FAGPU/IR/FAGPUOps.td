//===- FAGPUOps.td - FA's kernel-level ops ------------------*- tablegen -*-===//

#ifndef FA_DIALECT_FAGPU_IR_FAGPUOPS_TD
#define FA_DIALECT_FAGPU_IR_FAGPUOPS_TD

include "fa/Dialect/FA/IR/FAAttrs.td"
include "fa/Dialect/FAGPU/IR/FAGPUAttrs.td"
include "fa/Dialect/FAGPU/IR/FAGPUDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

defvar FAGPU_Token = FAGPU_TokenType;
defvar FAGPU_Shared = FAGPU_SharedType;
defvar FAGPU_Barriers = FAGPU_BarriersType;
// A [B, H, N, D] (or [B, H, N] for row values) buffer in global memory.
def FAGPU_Global : RankedOrUnrankedMemRefOf<[AnyType]>;
def FAGPU_Register : RankedTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Where the CTA is
//===----------------------------------------------------------------------===//

def FAGPU_BlockCoordsOp : FAGPU_Op<"block_coords", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "The (batch, query head, query tile) of this CTA";
  let description = [{
    The CTA's batch, query head and query tile (block ids z, y, x). With
    `heavy_first`, tiles run last to first: under a causal mask the last
    query tiles see the most keys, and launching them first leaves light
    CTAs for the grid's tail. With `head_group = G` too, the launch order
    is read in groups of G (head, batch) pairs, each group's tiles last to
    first and its heads fastest, so that the grid's tail is light tiles of
    G heads rather than one head's tiles from heavy to light, while the
    CTAs that run at once still share a few heads' K/V in L2. With
    `batch_fastest` the launch order is read with the batch fastest, then
    the query tile (last to first with `heavy_first`), then the head: the
    CTAs of one (head, tile) across the batch run together, so that a bias
    broadcast over the batch is read from memory once and from L2 by the
    others. With `rematerialize` the values are read again
    from the special registers where they are used instead of being kept
    live (in registers) across the loop before them.

    With `of %work in %tiles`, those of work item `work` of a persistent
    kernel (`fagpu.work_slot`) instead: items are numbered with the query
    tile fastest (`tiles` of them a head, so that the CTAs running at once
    share K and V in L2), then the query head, then the batch. With
    `paired` too (a causal kernel's), items 2u and 2u + 1 are one head's
    query tiles T - 1 - j and j - T % 2 (j = u mod ceil(T / 2), T = `tiles`):
    one heavy and one light tile, which together see about T + 1 key tiles
    under a causal mask, so that round robin over the pairs shares the work
    evenly. Where T is odd, the heaviest tile's partner (-1) is tile T, past
    the queries: an item with no rows. With `sorted_tail` too, only the
    pairs of the grid's full rounds but the last (p0 = max(P / C - 1, 0) C
    of the P pairs, C = nctaid.x) are items that way; items 2 p0 + u are
    the remaining pairs' tiles one by one, sorted by decreasing work: their
    heavy tiles by j ascending, then their light ones by j descending, the
    (head, batch) pairs fastest. A persistent kernel deals them to its CTAs
    in snake order (`fa-warp-specialize`'s `causal-order=tail`), so that the
    grid's last rounds even out instead of leaving CTAs idle.
  }];
  let arguments = (ins Optional<Index>:$work, Optional<Index>:$tiles,
                       UnitAttr:$heavy_first, UnitAttr:$paired,
                       UnitAttr:$sorted_tail,
                       UnitAttr:$rematerialize,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$head_group,
                       UnitAttr:$batch_fastest);
  let results = (outs Index:$batch, Index:$head, Index:$tile);
  let assemblyFormat = "(`of` $work^ `in` $tiles)? attr-dict";
  let hasVerifier = 1;
}

def FAGPU_WorkSlotOp : FAGPU_Op<"work_slot", [Pure]> {
  let summary = "This CTA's place in a persistent grid";
  let description = [{
    A persistent kernel's CTAs share its work items round robin: CTA `first`
    (block id x) runs items first, first + stride, ... where `stride` is the
    number of CTAs (grid x). The launch's grid rule is `persistent(...)`
    (KernelAbi.h): as many CTAs as the SMs hold at once, at most one an
    item, so that a CTA's next item's copies run under its current item's
    epilogue.
  }];
  let results = (outs Index:$first, Index:$stride);
  let assemblyFormat = "attr-dict";
}

def FAGPU_KVHeadOp : FAGPU_Op<"kv_head", [Pure]> {
  let summary = "The key/value head a query head reads (GQA, MQA)";
  let description = [{
    `head / (Hq / Hkv)`, Hq and Hkv the head dims (1) of `query` and `key`.
  }];
  let arguments = (ins Index:$head, FAGPU_Global:$query, FAGPU_Global:$key);
  let results = (outs Index:$result);
  let assemblyFormat = [{
    $head `of` $query `,` $key attr-dict `:` type($query) `,` type($key)
  }];
}

//===----------------------------------------------------------------------===//
// Which keys a query tile visits (the variant's masks at tile granularity)
//===----------------------------------------------------------------------===//

def FAGPU_VisibleKeysOp : FAGPU_Op<"visible_keys", [Pure]> {
  let summary = "The key rows queries [q0, q0 + block_q) can see";
  let description = [{
    `[begin, end)`: `begin` a multiple of `block_kv`, `end <= key_len`
    (`end <= begin` when nothing is visible), from the causal mask (either
    alignment) and the window, for Q of `query_len` rows and K of `key_len`.
    `within` the key ranges a key-range kernel wrote for this query tile
    (`fagpu.merge_key_range`; `query_offset / block_q` is the tile), the
    range shrinks to the key tiles where some row's `mask_mod` keeps a key.
  }];
  let arguments = (ins Index:$query_offset, Index:$query_len, Index:$key_len,
                       Optional<FAGPU_Global>:$key_ranges,
                       I64Attr:$block_q, I64Attr:$block_kv,
                       OptionalAttr<FA_CausalAttr>:$causal,
                       OptionalAttr<DenseI64ArrayAttr>:$window);
  let results = (outs Index:$begin, Index:$end);
  let assemblyFormat = [{
    $query_offset `of` ` ` `[` $query_len `,` $key_len `]`
    (`within` $key_ranges^ `:` type($key_ranges))? attr-dict
  }];
  let hasVerifier = 1;
}

def FAGPU_TileNeedsMaskOp : FAGPU_Op<"tile_needs_mask", [Pure]> {
  let summary = "Whether a (query tile, key tile) pair crosses a mask edge";
  let description = [{
    True when keys `[key_offset, key_offset + block_kv)` of queries
    `[query_offset, query_offset + block_q)` cross `key_len`, the causal
    diagonal or a window edge: only then must scores be masked one by one.
    The same for every thread of the CTA.
  }];
  let arguments = (ins Index:$query_offset, Index:$key_offset,
                       Index:$query_len, Index:$key_len,
                       I64Attr:$block_q, I64Attr:$block_kv,
                       OptionalAttr<FA_CausalAttr>:$causal,
                       OptionalAttr<DenseI64ArrayAttr>:$window);
  let results = (outs I1:$result);
  let assemblyFormat = [{
    ` ` `[` $query_offset `,` $key_offset `]` `of` ` ` `[` $query_len `,`
    $key_len `]` attr-dict
  }];
  let hasVerifier = 1;
}

def FAGPU_MaskOp : FAGPU_Op<"mask", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "-inf where a score is masked";
  let description = [{
    Scores of queries `query_offset + r` and keys `key_offset + c` become
    `-inf` where the key is at or past `key_len`, or the causal mask or the
    window hides it.
  }];
  let arguments = (ins FAGPU_Register:$scores, Index:$query_offset,
                       Index:$key_offset, Index:$query_len, Index:$key_len,
                       OptionalAttr<FA_CausalAttr>:$causal,
                       OptionalAttr<DenseI64ArrayAttr>:$window);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $scores `at` ` ` `[` $query_offset `,` $key_offset `]` `of` ` ` `[` $query_len
    `,` $key_len `]` attr-dict `:` type($scores)
  }];
  let hasVerifier = 1;
}

def FAGPU_MapOp : FAGPU_Op<"map", [RecursiveMemoryEffects, SingleBlock]> {
  let summary = "A scalar function of each element's value and position";
  let description = [{
    Applies `body` to each element of the accumulator tiles `inputs` (one
    shape and layout): its block takes each input's element, then the
    element's query row `row_offset + r` and key column `col_offset + c`
    (index), and yields the result's element. This is how a variant's score
    terms and `mask_mod` (the variant model's scalar definition, shared with
    the host route) apply to a tile: each thread evaluates the body for the
    elements it holds. The body may read values defined above it.

    ```mlir
    %t = fagpu.map %s at [%q0, %k0] : tensor<64x64xf32, #fagpu.acc<4>>
        -> tensor<64x64xf32, #fagpu.acc<4>> {
    ^bb0(%x: f32, %i: index, %j: index):
      %c = math.tanh %x : f32
      fagpu.yield %c : f32
    }
    ```
  }];
  let arguments = (ins Variadic<FAGPU_Register>:$inputs, Index:$row_offset,
                       Index:$col_offset);
  let results = (outs FAGPU_Register:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs `at` ` ` `[` $row_offset `,` $col_offset `]` attr-dict `:`
    type($inputs) `->` type($result) $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    // The body's block (each input's element type, then two indices) is
    // created empty: fill it and end it with fagpu.yield.
    OpBuilder<(ins "Type":$resultType, "ValueRange":$inputs,
                   "Value":$rowOffset, "Value":$colOffset)>
  ];
  let extraClassDeclaration = [{
    /// Whether the body reads only its inputs' elements: not the position
    /// nor memory (softcap; not ALiBi, bias, dropout or a capture).
    bool isElementwise();
  }];
}

def FAGPU_YieldOp : FAGPU_Op<"yield", [Pure, Terminator, HasParent<"MapOp">]> {
  let summary = "The element fagpu.map's body yields";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Shared memory and copies
//===----------------------------------------------------------------------===//

def FAGPU_AllocSharedOp : FAGPU_Op<"alloc_shared", [Pure]> {
  let summary = "A ring of tiles at a fixed offset of the shared memory";
  let description = [{
    `offset` bytes into the kernel's dynamic shared memory. Rings do not
    overlap; the kernel's shared memory is the end of the last.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset);
  let results = (outs FAGPU_Shared:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

class FAGPU_CopyBase<string mnemonic, list<Trait> traits = []>
    : FAGPU_Op<mnemonic, traits> {
  let hasVerifier = 1;
}

def FAGPU_CopyOp : FAGPU_CopyBase<"copy"> {
  let summary = "Copies rows of a head into a shared tile, synchronously";
  let description = [{
    Rows `[row, row + rows)` of the `[N, D]` matrix of (`batch`, `head`) of
    `source` into stage `stage` of `dest` (rows of the tile), rows at or past
    `bound` as zeros. After it every thread of the CTA sees the tile.
    fa-async-copy turns these into asynchronous copies.

    With `col`, a block of a `[Nq, Nk]` matrix (a bias): columns `[col, col
    + cols)` of those rows, columns past the source's as zeros.
  }];
  let arguments = (ins FAGPU_Global:$source, Index:$batch, Index:$head,
                       Index:$row, Optional<Index>:$col, Index:$bound,
                       FAGPU_Shared:$dest, Index:$stage);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row (`,` $col^)? `]` `bound` $bound `to`
    $dest `[` $stage `]` attr-dict `:` type($source) `to` qualified(type($dest))
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$source, "::mlir::Value":$batch,
                   "::mlir::Value":$head, "::mlir::Value":$row,
                   "::mlir::Value":$bound, "::mlir::Value":$dest,
                   "::mlir::Value":$stage), [{
      build($_builder, $_state, source, batch, head, row, /*col=*/::mlir::Value(),
            bound, dest, stage);
    }]>
  ];
}

def FAGPU_AsyncCopyOp : FAGPU_CopyBase<"async_copy", [AttrSizedOperandSegments]> {
  let summary = "Starts copying rows of a head into a shared tile";
  let description = [{
    `fagpu.copy` without waiting: the tile may be read once a wait on the
    commit of the returned token has returned and the CTA has passed a
    barrier after it, or, with `signal`, once a `barrier_wait` on the
    signalled barrier's phase has returned. (cp.async; with `bulk`, TMA.)
    With `if`, nothing is copied where the predicate is false (the token
    completes at once), so that a commit after it closes a group on every
    path. With `signal %b[%s]`, the copy's completion arrives on barrier `s`
    of `b`: once per thread that issues it (cp.async's
    `mbarrier.arrive.noinc`), which the barrier's `arrivals` count.

    `bulk` (sm_90a): one thread copies the whole tile as tensor copies
    (TMA, `cp.async.bulk.tensor`) through the source's tensor map, which
    zero-fills rows past the source's own row count; so `bound` must be
    that count (dim 2 of the source), the tile must be in wgmma's layout
    with a multiple of 64 columns, and the copy must `signal`: its thread
    arrives once on the barrier, expecting the tile's bytes, and the
    barrier's phase completes when they have landed. A `bulk` copy's writes
    are the async proxy's, which wgmma reads without a fence. With `col`
    (a bias block), the tile's 128-byte panels are one box each and the map
    zero-fills columns past the source's too.
  }];
  let arguments = (ins FAGPU_Global:$source, Index:$batch, Index:$head,
                       Index:$row, Optional<Index>:$col, Index:$bound,
                       FAGPU_Shared:$dest, Index:$stage, Optional<I1>:$predicate,
                       Optional<FAGPU_Barriers>:$barriers,
                       Optional<Index>:$barrierStage, UnitAttr:$bulk);
  let results = (outs FAGPU_Token:$token);
  let assemblyFormat = [{
    $source `[` $batch `,` $head `,` $row (`,` $col^)? `]` `bound` $bound `to`
    $dest `[` $stage `]` (`if` $predicate^)?
    (`signal` $barriers^ `[` $barrierStage `]`)?
    attr-dict `:` type($source) `to` qualified(type($dest))
    (`,` qualified(type($barriers))^)?
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$token, "::mlir::Value":$source,
                   "::mlir::Value":$batch, "::mlir::Value":$head,
                   "::mlir::Value":$row, "::mlir::Value":$bound,
                   "::mlir::Value":$dest, "::mlir::Value":$stage,
                   "::mlir::Value":$predicate), [{
      build($_builder, $_state, token, source, batch, head, row,
            /*col=*/::mlir::Value(), bound, dest, stage, predicate,
            /*barriers=*/::mlir::Value(),
            /*barrierStage=*/::mlir::Value(), /*bulk=*/false);
    }]>
  ];
}

def FAGPU_AsyncCommitOp : FAGPU_Op<"async_commit"> {
  let summary = "Closes a group of asynchronous copies";
  let description = [{
    The copies this thread started since the last commit (the `tokens`
    name them) form one group, which completes as a whole; groups complete
    in commit order. A commit of no token is an empty group (it keeps the
    count of groups the same on every path).
  }];
  let arguments = (ins Variadic<FAGPU_Token>:$tokens);
  let results = (outs FAGPU_Token:$group);
  let assemblyFormat = "$tokens attr-dict";
}

def FAGPU_AsyncWaitOp : FAGPU_Op<"async_wait"> {
  let summary = "Waits for a group of asynchronous copies";
  let description = [{
    Returns once `group` has completed; the `pending` groups committed after
    it may still be in flight.
  }];
  let arguments = (ins FAGPU_Token:$group,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let assemblyFormat = "$group attr-dict";
}

//===----------------------------------------------------------------------===//
// mbarriers and warp specialization
//===----------------------------------------------------------------------===//

def FAGPU_AllocBarriersOp : FAGPU_Op<"alloc_barriers"> {
  let summary = "A ring of mbarriers at a fixed offset of the shared memory";
  let description = [{
    `offset` bytes (a multiple of 8) into the kernel's dynamic shared memory,
    one mbarrier per stage, each initialized to phase 0 expecting `arrivals`
    arrive-ons per phase. Thread 0 initializes them: a `gpu.barrier` must
    separate this op from their first use.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntNonNegative]>:$offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$arrivals);
  let results = (outs FAGPU_Barriers:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def FAGPU_BarrierWaitOp : FAGPU_Op<"barrier_wait"> {
  let summary = "Waits for a phase of an mbarrier";
  let description = [{
    Returns once the phase of barrier `stage` of `barriers` whose parity
    (0 or 1) is `parity` has completed; what was written before the
    arrive-ons that completed it (copies that signalled it included) is
    visible after it, to the generic proxy and to wgmma's reads. A barrier
    in phase 0 that has not completed it passes a wait on parity 1 (the
    phase before it), so a ring's producer waits for "stage free" with the
    parity of its consumers' last round.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers, Index:$stage, Index:$parity);
  let assemblyFormat = [{
    $barriers `[` $stage `]` `parity` $parity attr-dict `:`
    qualified(type($barriers))
  }];
}

def FAGPU_BarrierArriveOp : FAGPU_Op<"barrier_arrive"> {
  let summary = "Arrives on an mbarrier";
  let description = [{
    One arrive-on per warpgroup that executes it, on barrier `stage` of
    `barriers`, by the warpgroup's first thread (release: what that thread
    read and wrote before it happens before a wait that sees the phase
    complete). The warpgroup's wgmma products are the warpgroup's as a
    whole: once the first thread waited for one, its reads of shared
    memory are done, which is what a consumer's release needs.

    With `per_warp`, one arrive-on per warp, by its first lane once the
    warp's lanes synchronized (bar.warp.sync): each thread's own reads of
    the stage (`fagpu.load_tile`) are then done too.
  }];
  let arguments = (ins FAGPU_Barriers:$barriers, Index:$stage,
                       UnitAttr:$per_warp);
  let assemblyFormat = [{
    $barriers `[` $stage `]` attr-dict `:` qualified(type($barriers))
  }];
}

def FAGPU_Warpgroups : ConfinedAttr<I64Attr, [IntMinValue<2>, IntMaxValue<15>]>;

class FAGPU_TurnOp<string mnemonic, dag args> : FAGPU_Op<mnemonic> {
  let arguments = args;
  let assemblyFormat = "`of` $warpgroups attr-dict";
  let hasVerifier = 1;
}

def FAGPU_TakeTurnOp : FAGPU_TurnOp<"take_turn",
    (ins FAGPU_Warpgroups:$warpgroups, UnitAttr:$first, UnitAttr:$end)> {
  let summary = "Waits for this consumer warpgroup's turn";
  let description = [{
    Turns go round the `warpgroups` consumer warpgroups of a
    fagpu.warp_specialize in order, 0, 1, ..., 0: a warpgroup's n-th take
    returns once the warpgroup before it made its n-th `fagpu.pass_turn`.
    With `first` (the first take), warpgroup 0 returns at once: it starts
    the rotation. With `end`, only warpgroup 0 takes (the last warpgroup's
    last pass, which a `last` pass would have dropped): a persistent kernel
    ends its rotation so after its last work item. What a warpgroup does
    between its take and its pass (the
    tensor-core products it issues) is never interleaved with another's:
    FlashAttention-3's ping-pong, one warpgroup's softmax under the other's
    products. Lowered to a named barrier per warpgroup (ids 1 to
    `warpgroups`, 256 threads: the taker's syncs, the passer's arrivals).
  }];
}

def FAGPU_PassTurnOp : FAGPU_TurnOp<"pass_turn",
    (ins FAGPU_Warpgroups:$warpgroups, UnitAttr:$last, UnitAttr:$start)> {
  let summary = "Gives the turn to the next consumer warpgroup";
  let description = [{
    Ends this warpgroup's turn without waiting: the next warpgroup (the
    first after the last) may take it. With `last` (the last pass), the last
    warpgroup does not pass, so that every pass is taken: the rotation ends
    with each warpgroup having taken as many turns as it passed. With
    `start`, only the last warpgroup passes (to warpgroup 0), so that
    warpgroup 0's first take returns at once without `first`: a persistent
    kernel starts its rotation so, before its first work item, and every
    item's takes and passes are then the plain ones.
  }];
}

def FAGPU_WarpSpecializeOp : FAGPU_Op<"warp_specialize", [
    NoTerminator, RecursiveMemoryEffects]> {
  let summary = "Splits the CTA into a producer and consumer warpgroups";
  let description = [{
    The CTA's last warpgroup (`known_block_size` minus the consumers'
    threads, 128) runs `producer` (the copies); the others, threads
    [0, consumer_threads), run `consumers` (the products, the softmax and
    the epilogue) with the thread ids they would have without the producer.
    The launch gives every thread the registers that let `ctas_per_sm`
    CTAs share an SM's 65536 (`.maxnreg`); each role then sets its own
    (`setmaxnreg`): `producer_registers` down, `consumer_registers` up, so
    that the consumers get the registers the producer does not need. The
    roles synchronize only through mbarriers (no CTA barrier inside
    either). Where every copy of `producer` is `bulk`, one thread runs it
    (the producer warpgroup's first; the others only give their registers
    back).
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$consumer_threads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$producer_registers,
                       ConfinedAttr<I64Attr, [IntPositive]>:$consumer_registers,
                       ConfinedAttr<I64Attr, [IntPositive]>:$ctas_per_sm);
  let extraClassDeclaration = [{
    /// Registers per thread at launch (`.maxnreg`): the SM's share of a
    /// thread of `ctas_per_sm` CTAs, in multiples of 8, at most 248.
    int64_t getLaunchRegisters();
  }];
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumers);
  let assemblyFormat = [{
    attr-dict-with-keyword `producer` $producer `consumers` $consumers
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tensor-core products and fragments
//===----------------------------------------------------------------------===//

def FAGPU_LoadOperandOp : FAGPU_Op<"load_operand", [Pure]> {
  let summary = "A shared tile into A-operand fragments";
  let arguments = (ins FAGPU_Shared:$source, Index:$stage);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $source `[` $stage `]` attr-dict `:` qualified(type($source)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_LoadTileOp : FAGPU_Op<"load_tile",
    [MemoryEffects<[MemRead]>]> {
  let summary = "A shared tile into registers, in the accumulator's layout";
  let description = [{
    Each thread reads the elements of stage `stage` of `source` that it
    holds of an accumulator of the tile's shape (`#fagpu.acc`): a bias
    block that a copy brought in with K, read for the scores' map.

    ```mlir
    %b = fagpu.load_tile %bias[%s] : !fagpu.shared<2x128x64xbf16, wgmma>
        -> tensor<128x64xbf16, #fagpu.acc<warps = 8>>
    ```
  }];
  let arguments = (ins FAGPU_Shared:$source, Index:$stage);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $source `[` $stage `]` attr-dict `:` qualified(type($source)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_MmaOp : FAGPU_Op<"mma", [Pure,
    OptionalTypesMatchWith<"acc has the result's type", "result", "acc",
                           "$_self">]> {
  let summary = "C (+)= A B on tensor cores";
  let description = [{
    `A` is `[M, K]`: operand fragments in registers, or a one-stage shared
    tile read per k-step. `B` is stage `b_stage` of a shared tile: `[K, N]`,
    or with `b_transposed` `[N, K]` (B^T as stored, e.g. K for Q K^T). The
    result is `[M, N]` f32 accumulator fragments, `acc` added when given.

    With `wgmma` the product runs as warpgroup MMAs (sm_90a): each
    warpgroup's 64 rows of an m-tile block, B (and a shared A) read by the
    tensor cores from tiles in wgmma's swizzle, A fragments otherwise from
    registers; the accumulator layout is the same.

    With `async` (wgmma only) the product is started, not waited for: its
    result is read through the `fagpu.mma_wait` that names it, so that other
    work runs on the tensor cores' time (fa-overlap-softmax).

    Tiles padded to wgmma's 64-column panels (a head dim of 80 or 96 in a
    128-column tile, zero past it) are read only as far as they hold data:
    with `depth` (a multiple of 16 below K) the product sums over the first
    `depth` of K only, and with wgmma B may have more than N columns, of
    which the product reads the first N.
  }];
  let arguments = (ins AnyType:$a, FAGPU_Shared:$b, Index:$b_stage,
                       Optional<FAGPU_Register>:$acc, UnitAttr:$b_transposed,
                       UnitAttr:$wgmma, UnitAttr:$async,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$depth);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $a `,` $b `[` $b_stage `]` (`acc` $acc^)? attr-dict `:` qualified(type($a)) `,`
    qualified(type($b)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_MmaWaitOp : FAGPU_Op<"mma_wait",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "Waits for an asynchronous product";
  let description = [{
    `source` is the result of an `async` fagpu.mma; it is returned once that
    product has completed. Products complete in the order they started: the
    `pending` asynchronous products started after this one may still run.

    `reads` is the product's A operand where it is in registers: the tensor
    cores read those registers while the product runs, so they are kept as
    they are until the wait (nothing else may be given their place).

    The `after` values are computed before the wait and returned as they
    are: the work that produces them runs while the product does, instead
    of being scheduled past the wait.
  }];
  let arguments = (ins FAGPU_Register:$source,
                       Optional<FAGPU_Register>:$reads,
                       Variadic<FAGPU_Register>:$ready,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let results = (outs FAGPU_Register:$result,
                      Variadic<FAGPU_Register>:$ready_results);
  let assemblyFormat = [{
    $source (`reads` $reads^ `:` type($reads))? (`after` $ready^ `:`
    type($ready))? attr-dict `:` type($source)
  }];
  let hasVerifier = 1;
}

def FAGPU_ToOperandOp : FAGPU_Op<"to_operand", [Pure]> {
  let summary = "Accumulator fragments as the A operand of the next product";
  let description = [{
    The accumulator layout of an `[M, N]` product is the A layout of an
    `[M, N] x [N, *]` one: the values are rounded to the result's element
    type and repacked in registers, without shared memory.
  }];
  let arguments = (ins FAGPU_Register:$source);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Row values (the online softmax's state)
//===----------------------------------------------------------------------===//

def FAGPU_ReduceRowsOp : FAGPU_Op<"reduce_rows", [Pure]> {
  let summary = "Max or sum of each row";
  let description = [{
    Of an `[M, N]` accumulator tile: each row's max or sum, as `[M]` row
    values, or (sum only) as a `partial` row sum that leaves the reduction
    across the quad for later. Of partial row values: the full sum.
  }];
  let arguments = (ins FAGPU_ReduceKindAttr:$kind, FAGPU_Register:$source);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $kind $source attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def FAGPU_UpdateRowSumOp : FAGPU_Op<"update_row_sum", [Pure,
    AllTypesMatch<["sum", "result"]>]> {
  let summary = "A running row sum plus each row's sum of a tile";
  let description = [{
    `sum` and the result are partial row sums (`#fagpu.rows<partial>`):
    each thread adds its own values of a row, and the quad's reduction is
    left to one `fagpu.reduce_rows` after the loop. The online softmax
    rescales `sum` first (`fagpu.scale_rows`). With `rounded` (f16 or
    bf16), each value is added as P V's A operand holds it, rounded to that
    type: the row sum is then the sum of the weights P V applies.
  }];
  let arguments = (ins FAGPU_Register:$sum, FAGPU_Register:$values,
                       OptionalAttr<TypeAttr>:$rounded);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $sum `,` $values (`rounded` $rounded^)? attr-dict `:` type($sum) `,`
    type($values)
  }];
  let hasVerifier = 1;
}

def FAGPU_ScaleRowsOp : FAGPU_Op<"scale_rows", [Pure,
    AllTypesMatch<["source", "result"]>]> {
  let summary = "Each row times its factor";
  let description = [{
    Multiplies every value of row `i` of `source` (an accumulator tile, row
    values or a partial row sum) by `factors[i]` (full row values): the
    online softmax's rescale of its sum and accumulator when the row max
    grows. The lowering places each row's multiplies right after that row's
    factor is computed.
  }];
  let arguments = (ins FAGPU_Register:$source, FAGPU_Register:$factors);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = [{
    $source `,` $factors attr-dict `:` type($source) `,` type($factors)
  }];
  let hasVerifier = 1;
}

def FAGPU_BroadcastRowsOp : FAGPU_Op<"broadcast_rows", [Pure]> {
  let summary = "Row values to every column of an accumulator tile";
  let arguments = (ins FAGPU_Register:$source);
  let results = (outs FAGPU_Register:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

def FAGPU_StoreOp : FAGPU_Op<"store"> {
  let summary = "Stores a tile (or row values) of rows below a bound";
  let description = [{
    An `[M, D]` accumulator tile into rows `[row, row + M)` of the `[N, D]`
    matrix of (`batch`, `head`) of a rank-4 `dest`, rounded to its element
    type; or `[M]` row values into a rank-3 `dest` (`[B, H, N]`). Rows at or
    past `bound` are not written.
  }];
  let arguments = (ins FAGPU_Register:$value, FAGPU_Global:$dest,
                       Index:$batch, Index:$head, Index:$row, Index:$bound);
  let assemblyFormat = [{
    $value `to` $dest `[` $batch `,` $head `,` $row `]` `bound` $bound
    attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def FAGPU_KeyChunkOp : FAGPU_Op<"key_chunk", [Pure]> {
  let summary = "The key chunk of this key-range kernel's CTA";
  let description = [{
    The chunk of `kKeyRangeChunk` keys whose key tiles this CTA of a
    key-range kernel evaluates (KernelAbi.h, "Key ranges"): the linear
    block id over y and z (grid y is tiles(Nk, kKeyRangeChunk), folded into
    z where it exceeds 65535; such a CTA's chunk may be past Nk).
  }];
  let results = (outs Index:$chunk);
  let assemblyFormat = "attr-dict";
}

def FAGPU_MergeKeyRangeOp : FAGPU_Op<"merge_key_range",
    [AllTypesMatch<["first", "last", "full_first", "full_last"]>]> {
  let summary = "Merges the key tiles each warp's rows see into its record";
  let description = [{
    The key-range kernel's result (KernelAbi.h, "Key ranges"), for the key
    chunk this CTA evaluated. `first` and `last` hold, per row, 1 + the
    first and 1 + the last key tile (of `kKeyRangeBlock` keys) where the
    row's `mask_mod` keeps a key, 0 where it keeps none; `full_first` and
    `full_last` 1 + the first and 1 + the last tile of a run where it keeps
    every key, 0 where the row has none. Each warp reduces its rows (the
    union of what they see, the intersection of their runs) and merges the
    result with atomics into its record of `ranges` at `(tile *
    kKeyRangeWarps + warp) * kKeyRangeInts`, which the launcher zeroed: the
    max of ~first and of last + 1 where it sees a tile, of ~first and last
    + 1 of its run where it has one, whose length it adds to the fifth word.
    The kernel has kKeyRangeWarps warps.
  }];
  let arguments = (ins FAGPU_Register:$first, FAGPU_Register:$last,
                       FAGPU_Register:$full_first, FAGPU_Register:$full_last,
                       FAGPU_Global:$ranges, Index:$tile);
  let assemblyFormat = [{
    $first `,` $last `full` $full_first `,` $full_last `to` $ranges `[` $tile
    `]` attr-dict `:` type($first) `,` type($ranges)
  }];
  let hasVerifier = 1;
}

def FAGPU_FullKeysOp : FAGPU_Op<"full_keys", [Pure]> {
  let summary = "The key rows whose scores a query tile's mask_mod keeps";
  let description = [{
    `[begin, end)` (`begin == end` when empty; multiples of the key ranges'
    tiles): keys where the `mask_mod` keeps every key of every row of
    queries `[query_offset, query_offset + block_q)`, from the key ranges a
    key-range kernel wrote for this query tile (`fagpu.merge_key_range`).
    A forward evaluates the `mask_mod` only on the key tiles outside it.
  }];
  let arguments = (ins Index:$query_offset, FAGPU_Global:$key_ranges,
                       I64Attr:$block_q);
  let results = (outs Index:$begin, Index:$end);
  let assemblyFormat = [{
    $query_offset `within` $key_ranges attr-dict `:` type($key_ranges)
  }];
  let hasVerifier = 1;
}

#endif // FA_DIALECT_FAGPU_IR_FAGPUOPS_TD
