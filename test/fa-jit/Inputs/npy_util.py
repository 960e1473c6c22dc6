"""Helpers for the fa-jit lit tests: write .npy inputs, check .npy outputs.

  gen DIR --shape B,Hq,Hkv,Nq,Nk,D[,Dv] --dtype f32|f16|bf16 [--seed N]
      [--scale X] [--bias-shape a,b,c,d --bias-dtype T] [--grad]
      writes DIR/q.npy, DIR/k.npy, DIR/v.npy (and DIR/bias.npy, and with
      --grad DIR/do.npy, the output gradient), normal values times X.
  array PATH --shape a,b,... --dtype T
      writes one random array (for the error tests).
  compare O.npy DIR [--lse LSE.npy] [--causal top-left|bottom-right]
      [--bias] [--bound X]
      recomputes attention in float64 with numpy from DIR's inputs (default
      scale) and prints "numpy O rel_err=... ok" (and lse); exits 1 over the
      bound.
  masked O.npy LSE.npy
      prints how many rows are fully masked (lse = -inf), checks that their
      O is exactly 0 and that nothing is NaN; exits 1 otherwise.
  finite O.npy [LSE.npy]
      prints "finite" when no value is NaN or infinite; exits 1 otherwise.
  grad-compare DQ.npy DK.npy DV.npy DIR [--causal top-left|bottom-right]
      [--bias] [--dbias DBIAS.npy] [--bound X]
      recomputes the backward (dQ, dK, dV given DIR/do.npy, and dBias) in
      float64 with numpy and prints "numpy dQ rel_err=... ok" (and dK, dV,
      dBias); exits 1 over the bound.
  masked-grad DQ.npy LSE.npy
      prints how many query rows are fully masked (lse = -inf), checks that
      their dQ is exactly 0 and that dQ has no NaN; exits 1 otherwise.
"""

import argparse
import os
import sys

import ml_dtypes
import numpy as np

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def load(path):
    a = np.load(path)
    # np.save writes ml_dtypes.bfloat16 as raw 2-byte voids.
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = a.view(ml_dtypes.bfloat16)
    return a


def ints(text):
    return [int(x) for x in text.split(",")]


def rel_err(out, ref):
    out = np.asarray(out, np.float64)
    ref = np.asarray(ref, np.float64)
    same_inf = np.isinf(ref) & (out == ref)
    diff = np.where(same_inf, 0.0, out - ref)
    if not np.all(np.isfinite(diff)):
        return float("inf")
    norm = np.linalg.norm(np.where(same_inf, 0.0, ref))
    err = np.linalg.norm(diff)
    return err / norm if norm > 0 else err


def cmd_gen(args):
    b, hq, hkv, nq, nk, d, *dv = ints(args.shape)
    dv = dv[0] if dv else d
    rng = np.random.default_rng(args.seed)
    dt = DTYPES[args.dtype]

    def normal(*shape, dtype=dt):
        return (rng.standard_normal(shape) * args.scale).astype(dtype)

    os.makedirs(args.dir, exist_ok=True)
    np.save(os.path.join(args.dir, "q.npy"), normal(b, hq, nq, d))
    np.save(os.path.join(args.dir, "k.npy"), normal(b, hkv, nk, d))
    np.save(os.path.join(args.dir, "v.npy"), normal(b, hkv, nk, dv))
    if args.bias_shape:
        bias = normal(*ints(args.bias_shape), dtype=DTYPES[args.bias_dtype])
        np.save(os.path.join(args.dir, "bias.npy"), bias)
    # Last, so that a seed gives the forward's inputs too.
    if args.grad:
        np.save(os.path.join(args.dir, "do.npy"), normal(b, hq, nq, dv))


def cmd_array(args):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(ints(args.shape)).astype(DTYPES[args.dtype])
    np.save(args.path, a)


def reference(q, k, v, causal=None, bias=None):
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    k = np.repeat(k, hq // hkv, axis=1)
    v = np.repeat(v, hq // hkv, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(d)
    if bias is not None:
        s = s + np.asarray(bias, np.float64)
    if causal:
        i = np.arange(nq)[:, None]
        j = np.arange(nk)[None, :]
        diag = i if causal == "top-left" else i + nk - nq
        s = np.where(j <= diag, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, v)
    o = np.where(l > 0, o / np.where(l > 0, l, 1.0), 0.0)
    with np.errstate(divide="ignore"):
        lse = (m + np.log(l))[..., 0]
    return o, lse


def cmd_compare(args):
    q, k, v = (load(os.path.join(args.dir, n + ".npy")) for n in "qkv")
    bias = load(os.path.join(args.dir, "bias.npy")) if args.bias else None
    o_ref, lse_ref = reference(q, k, v, args.causal, bias)
    o = load(args.out)
    if o.shape != o_ref.shape:
        print(f"numpy: O shape {o.shape} != {o_ref.shape}")
        return 1
    ok = True
    bound = args.bound
    for name, got, ref, bnd in [("O", o, o_ref, bound)] + (
        [("lse", load(args.lse), lse_ref, 1e-5)] if args.lse else []
    ):
        err = rel_err(got, ref)
        good = err <= bnd
        ok &= good
        print(f"numpy {name} rel_err={err:.3e} {'ok' if good else 'FAIL'}")
    return 0 if ok else 1


def grad_reference(q, k, v, do, causal=None, bias=None):
    """dQ, dK, dV of attention (default scale) given dO, in float64."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    b, hq, nq, d = q.shape
    hkv, nk = k.shape[1], k.shape[2]
    g = hq // hkv
    kr = np.repeat(k, g, axis=1)
    vr = np.repeat(v, g, axis=1)
    scale = 1.0 / np.sqrt(d)
    s = np.einsum("bhid,bhjd->bhij", q, kr) * scale
    if bias is not None:
        s = s + np.asarray(bias, np.float64)
    if causal:
        i = np.arange(nq)[:, None]
        j = np.arange(nk)[None, :]
        diag = i if causal == "top-left" else i + nk - nq
        s = np.where(j <= diag, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    p = np.exp(s - m)
    l = p.sum(axis=-1, keepdims=True)
    p = np.where(l > 0, p / np.where(l > 0, l, 1.0), 0.0)
    dp = np.einsum("bhid,bhjd->bhij", do, vr)
    ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
    dq = np.einsum("bhij,bhjd->bhid", ds, kr) * scale
    dk = np.einsum("bhij,bhid->bhjd", ds, q) * scale
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    # Query heads of one group share a K/V head: sum their gradients.
    dk = dk.reshape(b, hkv, g, nk, d).sum(axis=2)
    dv = dv.reshape(b, hkv, g, nk, dv.shape[-1]).sum(axis=2)
    # dBias: dS summed over the dims the bias broadcasts.
    dbias = None
    if bias is not None:
        axes = tuple(i for i, n in enumerate(np.shape(bias)) if n == 1)
        dbias = ds.sum(axis=axes, keepdims=True)
    return dq, dk, dv, dbias


def cmd_grad_compare(args):
    q, k, v, do = (load(os.path.join(args.dir, n + ".npy"))
                   for n in ("q", "k", "v", "do"))
    bias = load(os.path.join(args.dir, "bias.npy")) if args.bias else None
    refs = grad_reference(q, k, v, do, args.causal, bias)
    ok = True
    names, paths = ["dQ", "dK", "dV"], [args.dq, args.dk, args.dv]
    if args.dbias:
        names.append("dBias")
        paths.append(args.dbias)
    for name, path, ref in zip(names, paths, refs):
        got = load(path)
        if got.shape != ref.shape:
            print(f"numpy: {name} shape {got.shape} != {ref.shape}")
            return 1
        err = rel_err(got, ref)
        good = err <= args.bound
        ok &= good
        print(f"numpy {name} rel_err={err:.3e} {'ok' if good else 'FAIL'}")
    return 0 if ok else 1


def cmd_masked_grad(args):
    dq = np.asarray(load(args.dq), np.float64)
    lse = np.asarray(load(args.lse), np.float64)
    masked = np.isneginf(lse)
    print(f"masked_rows={int(masked.sum())} of {lse.size}")
    print(f"nan={int(np.isnan(dq).sum())}")
    zero = bool(np.all(dq[masked] == 0.0))
    print(f"masked_dq_zero={zero}")
    return 0 if zero and not np.isnan(dq).any() else 1


def cmd_masked(args):
    o = np.asarray(load(args.out), np.float64)
    lse = np.asarray(load(args.lse), np.float64)
    masked = np.isneginf(lse)
    print(f"masked_rows={int(masked.sum())} of {lse.size}")
    print(f"nan={int(np.isnan(o).sum() + np.isnan(lse).sum())}")
    zero = bool(np.all(o[masked] == 0.0))
    print(f"masked_o_zero={zero}")
    return 0 if zero and not np.isnan(o).any() and not np.isnan(lse).any() else 1


def cmd_finite(args):
    ok = True
    for path in [args.out] + ([args.lse] if args.lse else []):
        a = np.asarray(load(path), np.float64)
        ok &= bool(np.all(np.isfinite(a)))
        print(f"{os.path.basename(path)} max_abs={np.abs(a).max():.4g}")
    print("finite" if ok else "NOT finite")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("gen")
    p.add_argument("dir")
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype", default="f32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--bias-shape")
    p.add_argument("--bias-dtype", default="f32")
    p.add_argument("--grad", action="store_true")
    p = sub.add_parser("array")
    p.add_argument("path")
    p.add_argument("--shape", required=True)
    p.add_argument("--dtype", default="f32")
    p = sub.add_parser("compare")
    p.add_argument("out")
    p.add_argument("dir")
    p.add_argument("--lse")
    p.add_argument("--causal")
    p.add_argument("--bias", action="store_true")
    p.add_argument("--bound", type=float, default=1e-5)
    p = sub.add_parser("masked")
    p.add_argument("out")
    p.add_argument("lse")
    p = sub.add_parser("finite")
    p.add_argument("out")
    p.add_argument("lse", nargs="?")
    p = sub.add_parser("grad-compare")
    p.add_argument("dq")
    p.add_argument("dk")
    p.add_argument("dv")
    p.add_argument("dir")
    p.add_argument("--causal")
    p.add_argument("--bias", action="store_true")
    p.add_argument("--dbias")
    p.add_argument("--bound", type=float, default=1e-5)
    p = sub.add_parser("masked-grad")
    p.add_argument("dq")
    p.add_argument("lse")
    args = parser.parse_args()
    handler = {
        "gen": cmd_gen,
        "array": cmd_array,
        "compare": cmd_compare,
        "masked": cmd_masked,
        "finite": cmd_finite,
        "grad-compare": cmd_grad_compare,
        "masked-grad": cmd_masked_grad,
    }[args.cmd]
    sys.exit(handler(args) or 0)


if __name__ == "__main__":
    main()
