// A training step's two ops in one file: fa-jit wants exactly one.
func.func @step(%q: tensor<1x2x8x32xf32>, %k: tensor<1x2x8x32xf32>,
                %v: tensor<1x2x8x32xf32>, %do: tensor<1x2x8x32xf32>)
    -> (tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>
      -> tensor<1x2x8x32xf32>, tensor<1x2x8xf32>
  %dq, %dk, %dv = fa.attention_grad %q, %k, %v, %o, %do, %lse
      : tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>,
        tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8xf32>
      -> tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>
  return %dq, %dk, %dv
      : tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>
}
