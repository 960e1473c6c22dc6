func.func @two(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>,
               %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  %o = fa.attention %q, %k, %v
      : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
      -> tensor<1x2x16x32xf32>
  %o2 = fa.attention %o, %k, %v
      : tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>
      -> tensor<1x2x16x32xf32>
  return %o2 : tensor<1x2x16x32xf32>
}
