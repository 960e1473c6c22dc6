// A mask_mod of i and j whose full key tiles (no key hidden) differ from
// row to row: row i keeps keys below 256 + 128 (i / 40), except the keys of
// tile 3 ([384, 512)). Rows below 80 have a run of full tiles ({0, 1} or
// {0, 1, 2}); the others have full tiles on both sides of tile 3, which is
// no run. fa-key-ranges intersects the rows' runs: a forward that skipped
// the mask_mod on a tile some row needs it on would be wrong. bf16, D = 64,
// dynamic B and N.
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>,
             %v: tensor<?x4x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      : tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> mask_mod {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c3 = arith.constant 3 : index
    %c40 = arith.constant 40 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %step = arith.divui %i, %c40 : index
    %more = arith.muli %step, %c128 : index
    %limit = arith.addi %more, %c256 : index
    %below = arith.cmpi ult, %j, %limit : index
    %tile = arith.divui %j, %c128 : index
    %other = arith.cmpi ne, %tile, %c3 : index
    %keep = arith.andi %other, %below : i1
    fa.yield %keep : i1
  }
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
