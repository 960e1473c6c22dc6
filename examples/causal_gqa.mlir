// Causal grouped-query attention as a model would call it: 8 query heads
// sharing 2 key/value heads, head dim 64, bf16, any batch size and length.
// Run it: build/bin/fa-jit examples/causal_gqa.mlir --shape=2,8,2,300,300,64 --check
func.func @causal_gqa(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                      %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v {causal = #fa.causal<bottom_right>}
      : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}
