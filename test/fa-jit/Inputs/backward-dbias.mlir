// The backward with the bias's gradient (grad_bias): an f32 [B, 1, Nq, Nk]
// bias broadcast over heads, f16 inputs, static shapes. dBias sums dS over
// the heads.
func.func @grad(%q: tensor<2x4x20x64xf16>, %k: tensor<2x2x30x64xf16>,
                %v: tensor<2x2x30x64xf16>, %o: tensor<2x4x20x64xf16>,
                %do: tensor<2x4x20x64xf16>, %lse: tensor<2x4x20xf32>,
                %bias: tensor<2x1x20x30xf32>)
    -> (tensor<2x4x20x64xf16>, tensor<2x2x30x64xf16>, tensor<2x2x30x64xf16>,
        tensor<2x1x20x30xf32>) {
  %dq, %dk, %dv, %db = fa.attention_grad %q, %k, %v, %o, %do, %lse
      bias(%bias : tensor<2x1x20x30xf32>) {causal = #fa.causal<bottom_right>}
      : tensor<2x4x20x64xf16>, tensor<2x2x30x64xf16>, tensor<2x2x30x64xf16>,
        tensor<2x4x20x64xf16>, tensor<2x4x20x64xf16>, tensor<2x4x20xf32>
      -> tensor<2x4x20x64xf16>, tensor<2x2x30x64xf16>, tensor<2x2x30x64xf16>,
         tensor<2x1x20x30xf32>
  return %dq, %dk, %dv, %db
      : tensor<2x4x20x64xf16>, tensor<2x2x30x64xf16>, tensor<2x2x30x64xf16>,
        tensor<2x1x20x30xf32>
}
