// ALiBi with per-batch slopes [B, Hq], GQA 4:2, bottom-right causal; bf16,
// D = 64, dynamic B and N (the scored path, test/gpu/gpu-tests.sh).
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
             %v: tensor<?x2x?x64xbf16>, %s: tensor<?x4xf32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v alibi_slopes(%s : tensor<?x4xf32>)
      {causal = #fa.causal<bottom_right>}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
