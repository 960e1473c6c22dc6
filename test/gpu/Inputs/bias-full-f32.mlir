// A full f32 bias [B, Hq, Nq, Nk]; f16, D = 128, dynamic B and N.
func.func @f(%q: tensor<?x4x?x128xf16>, %k: tensor<?x4x?x128xf16>,
             %v: tensor<?x4x?x128xf16>, %b: tensor<?x4x?x?xf32>)
    -> (tensor<?x4x?x128xf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v bias(%b : tensor<?x4x?x?xf32>)
      : tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>, tensor<?x4x?x128xf16>
      -> tensor<?x4x?x128xf16>, tensor<?x4x?xf32>
  return %o, %lse : tensor<?x4x?x128xf16>, tensor<?x4x?xf32>
}
