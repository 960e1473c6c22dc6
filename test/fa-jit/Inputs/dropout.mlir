func.func @dropout(%q: tensor<?x2x?x32xf16>, %k: tensor<?x2x?x32xf16>,
                   %v: tensor<?x2x?x32xf16>, %seed: i64)
    -> tensor<?x2x?x32xf16> {
  %o = fa.attention %q, %k, %v dropout_seed(%seed) {dropout_p = 1.000000e-01 : f32}
      : tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>, tensor<?x2x?x32xf16>
      -> tensor<?x2x?x32xf16>
  return %o : tensor<?x2x?x32xf16>
}
