func.func @bad(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>,
               %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  %o = fa.attention %q, %k, %v {window = array<i64: -1, 2>}
      : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
      -> tensor<1x2x16x32xf32>
  return %o : tensor<1x2x16x32xf32>
}
