// A bf16 bias broadcast over batch and query rows [1, Hq, 1, Nk], GQA 4:1,
// top-left causal; bf16, D = 64, dynamic B and N.
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x1x?x64xbf16>,
             %v: tensor<?x1x?x64xbf16>, %b: tensor<1x4x1x?xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v bias(%b : tensor<1x4x1x?xbf16>)
      {causal = #fa.causal<top_left>}
      : tensor<?x4x?x64xbf16>, tensor<?x1x?x64xbf16>, tensor<?x1x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
