func.func @none(%q: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  return %q : tensor<1x2x16x32xf32>
}
