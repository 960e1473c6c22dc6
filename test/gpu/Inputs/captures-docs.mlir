// Captured tensors on the GPU: document masking from per-token document
// ids (i32 [N]) and a per-head table (f32 [Hq]) read with tensor.extract;
// causal within a document, score += tab[h] * (j - i). bf16, D = 64, GQA
// 4:2, dynamic B and N (run with --captures=doc.npy,tab.npy).
func.func @documents(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                     %v: tensor<?x2x?x64xbf16>, %doc: tensor<?xi32>,
                     %tab: tensor<4xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      captures(%doc, %tab : tensor<?xi32>, tensor<4xf32>)
      {causal = #fa.causal<top_left>}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index,
       %d: tensor<?xi32>, %t: tensor<4xf32>):
    %slope = tensor.extract %t[%h] : tensor<4xf32>
    %dist = arith.subi %j, %i : index
    %di = arith.index_cast %dist : index to i64
    %df = arith.sitofp %di : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    fa.yield %r : f32
  } mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index, %d: tensor<?xi32>,
       %t: tensor<4xf32>):
    %di = tensor.extract %d[%i] : tensor<?xi32>
    %dj = tensor.extract %d[%j] : tensor<?xi32>
    %same = arith.cmpi eq, %di, %dj : i32
    fa.yield %same : i1
  }
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
