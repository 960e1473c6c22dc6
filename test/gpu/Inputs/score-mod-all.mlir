// Every score term at once: softcap, ALiBi [Hq], a bf16 bias [B, Hq, Nq, Nk]
// and a score_mod (tanh soft cap of s plus a per-head relative-position
// term), bottom-right causal, GQA 4:2; bf16, D = 128, dynamic B and N.
func.func @f(%q: tensor<?x4x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
             %v: tensor<?x2x?x128xbf16>, %b: tensor<?x4x?x?xbf16>,
             %s: tensor<4xf32>)
    -> (tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v bias(%b : tensor<?x4x?x?xbf16>)
      alibi_slopes(%s : tensor<4xf32>)
      {causal = #fa.causal<bottom_right>, softcap = 3.000000e+01 : f32}
      : tensor<?x4x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
      -> tensor<?x4x?x128xbf16>, tensor<?x4x?xf32> score_mod {
  ^bb0(%x: f32, %bb: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 8.000000e+00 : f32
    %xs = arith.divf %x, %cap : f32
    %t = math.tanh %xs : f32
    %capped = arith.mulf %t, %cap : f32
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %c1 = arith.constant 1 : index
    %h1 = arith.addi %h, %c1 : index
    %hi = arith.index_cast %h1 : index to i32
    %hf = arith.sitofp %hi : i32 to f32
    %c = arith.constant 1.000000e-02 : f32
    %w = arith.mulf %c, %hf : f32
    %rel = arith.mulf %w, %df : f32
    %r = arith.addf %capped, %rel : f32
    fa.yield %r : f32
  }
  return %o, %lse : tensor<?x4x?x128xbf16>, tensor<?x4x?xf32>
}
