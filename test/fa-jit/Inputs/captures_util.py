"""Inputs and an independent float64 numpy reference for captures.mlir.

  gen DIR --shape B,H,N,D [--seed S] [--dtype f32|bf16]
      writes DIR/q.npy, k.npy, v.npy, do.npy (normal), doc.npy (int32 [N]
      document ids, non-decreasing, documents of random length) and tab.npy
      (float32 [H]).
  compare O.npy DIR [--bound X]
      recomputes captures.mlir's variant (causal, same document, score +=
      tab[h] * (j - i)) in float64 and prints "numpy O rel_err=... ok";
      exits 1 over the bound.
"""

import argparse
import sys

import ml_dtypes
import numpy as np

DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}


def cmd_gen(args):
    b, h, n, d = (int(x) for x in args.shape.split(","))
    rng = np.random.default_rng(args.seed)
    dt = DTYPES[args.dtype]
    for name in ("q", "k", "v", "do"):
        np.save(f"{args.dir}/{name}.npy", rng.standard_normal((b, h, n, d)).astype(dt))
    # Documents of 1 to 20 tokens.
    doc = np.repeat(np.arange(n), rng.integers(1, 21, size=n))[:n].astype(np.int32)
    np.save(f"{args.dir}/doc.npy", doc)
    np.save(f"{args.dir}/tab.npy", rng.uniform(-0.5, 0.5, size=h).astype(np.float32))


def load(path):
    a = np.load(path)
    if a.dtype.kind == "V" and a.dtype.itemsize == 2:
        a = a.view(ml_dtypes.bfloat16)
    return a.astype(np.float64)


def cmd_compare(args):
    q, k, v = (load(f"{args.dir}/{x}.npy") for x in "qkv")
    doc = np.load(f"{args.dir}/doc.npy")
    tab = np.load(f"{args.dir}/tab.npy").astype(np.float64)
    n = q.shape[2]
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    s = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[3])
    s = s + tab[None, :, None, None] * (j - i)
    keep = (j <= i) & (doc[:, None] == doc[None, :])
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    ref = (p / p.sum(-1, keepdims=True)) @ v
    out = load(args.out)
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    ok = err <= args.bound
    print(f"numpy O rel_err={err:.3e} {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("dir")
    g.add_argument("--shape", required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--dtype", default="f32")
    c = sub.add_parser("compare")
    c.add_argument("out")
    c.add_argument("dir")
    c.add_argument("--bound", type=float, default=1e-5)
    args = p.parse_args()
    return {"gen": cmd_gen, "compare": cmd_compare}[args.cmd](args) or 0


if __name__ == "__main__":
    sys.exit(main())
