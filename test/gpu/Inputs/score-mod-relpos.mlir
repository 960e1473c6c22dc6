// A score_mod alone (no bias, ALiBi or captures: the kernel-level IR's
// fagpu.map): a per-head relative-position term and a tanh soft cap inside
// the mod, with softcap on top, top-left causal, GQA 4:2; bf16, D = 64,
// dynamic B and N.
func.func @f(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
             %v: tensor<?x2x?x64xbf16>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>) {
  %o, %lse = fa.attention %q, %k, %v
      {causal = #fa.causal<top_left>, softcap = 2.000000e+01 : f32}
      : tensor<?x4x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>
      -> tensor<?x4x?x64xbf16>, tensor<?x4x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.subi %i, %j : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %h64 = arith.index_cast %h : index to i64
    %hf = arith.sitofp %h64 : i64 to f32
    %one = arith.constant 1.000000e+00 : f32
    %h1 = arith.addf %hf, %one : f32
    %c = arith.constant 1.000000e-02 : f32
    %slope = arith.mulf %h1, %c : f32
    %pen = arith.mulf %slope, %df : f32
    %t = arith.subf %s, %pen : f32
    %cap = arith.constant 5.000000e+00 : f32
    %x = arith.divf %t, %cap : f32
    %th = math.tanh %x : f32
    %r = arith.mulf %th, %cap : f32
    fa.yield %r : f32
  }
  return %o, %lse : tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>
}
