// The backward with per-batch ALiBi slopes ([B, Hq]; fa-jit divides batch
// b's slopes by b + 1) and a bottom-right causal mask. f16, static shapes.
func.func @grad(%q: tensor<3x4x40x64xf16>, %k: tensor<3x4x56x64xf16>,
                %v: tensor<3x4x56x64xf16>, %o: tensor<3x4x40x64xf16>,
                %do: tensor<3x4x40x64xf16>, %lse: tensor<3x4x40xf32>,
                %slopes: tensor<3x4xf32>)
    -> (tensor<3x4x40x64xf16>, tensor<3x4x56x64xf16>, tensor<3x4x56x64xf16>) {
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      alibi_slopes(%slopes : tensor<3x4xf32>) {causal = #fa.causal<bottom_right>}
      : tensor<3x4x40x64xf16>, tensor<3x4x56x64xf16>, tensor<3x4x56x64xf16>,
        tensor<3x4x40x64xf16>, tensor<3x4x40x64xf16>, tensor<3x4x40xf32>
      -> tensor<3x4x40x64xf16>, tensor<3x4x56x64xf16>, tensor<3x4x56x64xf16>
  return %dq, %dk, %dv
      : tensor<3x4x40x64xf16>, tensor<3x4x56x64xf16>, tensor<3x4x56x64xf16>
}
