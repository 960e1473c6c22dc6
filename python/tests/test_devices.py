"""fa.attention on any CUDA device, and in CUDA graphs (issue 19 items 3, 4).

- A training step (forward and backward through autograd, causal bf16)
  captured in a CUDA graph replays with new inputs and gives the float64
  reference's gradients: nothing on the call path allocates with cuMemAlloc or
  waits on the host (the backward's workspace comes from torch's caching
  allocator; FAFakeDeviceTests counts the driver calls). So does one with a
  document mask_mod, whose key ranges live in a workspace of torch's too.
- Tensors on cuda:1 run on device 1, whatever the current device, which FA
  leaves as it was; tensors of one call on two devices are a named error.
  Needs two GPUs (skipped, saying so, with fewer).

Every test is marked ``gpu``: skipped without torch and a CUDA device,
failed where FA_REQUIRE_GPU=1 (conftest.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fa
from reference import (
    check,
    check_attention,
    check_attention_grad,
    np_dtype,
    reference,
    reference_grad,
)

try:
    import torch
except ImportError:  # the gpu mark skips (or fails) every test
    torch = None

pytestmark = pytest.mark.gpu


def numpy(t) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(np_dtype("bfloat16"))
    return t.numpy()


def f64(t) -> np.ndarray:
    return t.detach().double().cpu().numpy()


def reference_grads(q, k, v, dout, causal: str):
    """O and (dQ, dK, dV) in float64 on the CPU (top-left or bottom-right causal)."""
    ref = [x.detach().double().cpu().requires_grad_() for x in (q, k, v)]
    group = q.shape[1] // k.shape[1]
    kr, vr = ref[1].repeat_interleave(group, 1), ref[2].repeat_interleave(group, 1)
    s = ref[0] @ kr.transpose(-1, -2) / math.sqrt(q.shape[-1])
    nq, nk = q.shape[2], k.shape[2]
    i, j = torch.arange(nq).view(-1, 1), torch.arange(nk).view(1, -1)
    s = s.masked_fill(~(j <= i + (nk - nq if causal == "bottom_right" else 0)), float("-inf"))
    o = torch.softmax(s, dim=-1) @ vr
    (o * dout.double().cpu()).sum().backward()
    return o.detach(), [r.grad for r in ref]


def check_step(q, k, v, dout, o, grads, causal: str) -> None:
    """O and the gradients of one step against float64 (docs/accuracy.md's bound)."""
    ref_o, ref_grads = reference_grads(q, k, v, dout, causal)
    args, precision = (numpy(q), numpy(k), numpy(v)), numpy(q).dtype
    lowp_o = reference(*args, precision=precision, causal=causal)[0]
    lowp = reference_grad(*args, numpy(dout), precision=precision, causal=causal)
    check("O", f64(o), f64(ref_o), lowp_o)
    for name, g, r, base in zip(("dQ", "dK", "dV"), grads, ref_grads, lowp):
        assert g is not None and g.device == q.device and g.dtype == q.dtype
        check(name, f64(g), f64(r), base)


def capture_step(step, params):
    """A CUDA graph of `step` (forward and backward; it returns O): warmed up
    on a side stream first (torch.cuda.graph's rule: loads the kernels and
    fills the caching allocator). Returns the graph, its static O and the
    params' gradients, which the captured backward makes in the graph's
    pool."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            for x in params:
                x.grad = None
            step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    for x in params:
        x.grad = None
    with torch.cuda.graph(graph):
        static_o = step()
    return graph, static_o, tuple(x.grad for x in params)


def test_training_step_in_a_cuda_graph() -> None:
    """torch.cuda.graph captures fa.attention's forward and autograd's backward
    (causal bf16, GQA); replays with new inputs copied into the static tensors
    give the reference's O and gradients."""
    shape_q, shape_kv = (2, 8, 256, 64), (2, 2, 256, 64)
    gen = torch.Generator(device="cuda").manual_seed(3)

    def randn(shape):
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)

    q, k, v = (randn(s).requires_grad_() for s in (shape_q, shape_kv, shape_kv))
    dout = randn(shape_q)

    def step():
        o = fa.attention(q, k, v, causal=True)
        o.backward(dout)
        return o

    graph, static_o, grads = capture_step(step, (q, k, v))

    for seed in (11, 12):
        gen.manual_seed(seed)
        with torch.no_grad():
            for static, shape in ((q, shape_q), (k, shape_kv), (v, shape_kv), (dout, shape_q)):
                static.copy_(randn(shape))
        graph.replay()
        torch.cuda.synchronize()
        check_step(q, k, v, dout, static_o, grads, "top_left")


def test_document_mask_in_a_cuda_graph() -> None:
    """A document mask_mod's key-range kernel writes its ranges into a
    workspace from torch's caching allocator: forward and backward capture in
    a CUDA graph, and replays with new inputs and new document ids (the
    captured tensor, changed in place) give the reference's O and
    gradients."""
    shape = (1, 4, 384, 64)
    n = shape[2]
    gen = torch.Generator(device="cuda").manual_seed(5)
    doc = torch.zeros(n, dtype=torch.int32, device="cuda")

    def mask(b, h, q_idx, kv_idx):
        return doc[q_idx] == doc[kv_idx]

    def randn():
        return torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=gen)

    def new_documents(seed: int) -> None:
        lengths = torch.randint(1, 160, (n,), generator=torch.Generator().manual_seed(seed))
        ids = torch.repeat_interleave(torch.arange(n), lengths)[:n]
        doc.copy_(ids.to(torch.int32))

    q, k, v = (randn().requires_grad_() for _ in range(3))
    dout = randn()

    def step():
        o = fa.attention(q, k, v, mask_mod=mask)
        o.backward(dout)
        return o

    new_documents(0)
    graph, static_o, grads = capture_step(step, (q, k, v))

    for seed in (21, 22):
        new_documents(seed)
        gen.manual_seed(seed)
        with torch.no_grad():
            for static in (q, k, v, dout):
                static.copy_(randn())
        graph.replay()
        torch.cuda.synchronize()
        ids = doc.cpu().numpy()

        def np_mask(b, h, i, j):
            return ids[i] == ids[j]

        args = (numpy(q), numpy(k), numpy(v))
        check_attention(*args, numpy(static_o), mask_mod=np_mask)
        check_attention_grad(
            *args, numpy(dout), tuple(numpy(g) for g in grads), mask_mod=np_mask
        )


def two_gpus() -> None:
    count = torch.cuda.device_count()
    if count < 2:
        pytest.skip(f"needs 2 CUDA devices, found {count}")


def test_second_gpu_runs_forward_and_backward() -> None:
    """cuda:1 tensors run on device 1 whether the current device is 0 or 1,
    and the current device stays what it was."""
    two_gpus()
    gen = torch.Generator(device="cpu").manual_seed(4)
    host = [torch.randn(2, 4, 200, 64, generator=gen).to(torch.bfloat16) for _ in range(4)]
    torch.cuda.set_device(0)
    results = {}
    for device, current in (("cuda:1", 0), ("cuda:1", 1), ("cuda:0", 0)):
        with torch.cuda.device(current):
            q, k, v = (x.to(device).requires_grad_() for x in host[:3])
            dout = host[3].to(device)
            o = fa.attention(q, k, v, causal="bottom_right")
            o.backward(dout)
            torch.cuda.synchronize(device)
            assert torch.cuda.current_device() == current
            assert o.device == torch.device(device)
            check_step(q, k, v, dout, o, (q.grad, k.grad, v.grad), "bottom_right")
            results[(device, current)] = o.detach().cpu()
    assert torch.cuda.current_device() == 0
    # One kernel on two devices of one chip: the same O, bit for bit.
    assert torch.equal(results[("cuda:1", 0)], results[("cuda:0", 0)])


def test_second_gpu_on_another_thread_and_stream() -> None:
    """A thread that never touched device 1 (no current context) runs cuda:1
    tensors on one of device 1's streams."""
    two_gpus()
    import threading

    out = {}

    def work() -> None:
        q = torch.randn(1, 4, 128, 64, device="cuda:1", dtype=torch.float16)
        stream = torch.cuda.Stream(device="cuda:1")
        with torch.cuda.stream(stream):
            out["o"] = fa.attention(q, q, q)
        stream.synchronize()
        out["q"] = q

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    q, o = out["q"], out["o"]
    ref = torch.softmax(q.double() @ q.double().transpose(-1, -2) / 8.0, dim=-1) @ q.double()
    assert o.device == torch.device("cuda:1")
    assert float((o.double() - ref).abs().max()) < 2e-2


def test_tensors_on_two_gpus_are_an_error() -> None:
    two_gpus()
    q = torch.randn(1, 2, 64, 64, device="cuda:0", dtype=torch.bfloat16)
    k = q.to("cuda:1")
    with pytest.raises(ValueError, match=r"^fa\.attention: k is on cuda:1 but q is on cuda:0$"):
        fa.attention(q, k, q)
    with pytest.raises(ValueError, match=r"^fa\.attention: v is on cuda:1 but q is on cuda:0$"):
        fa.attention(q, q, k)
    bias = torch.zeros(64, 64, device="cuda:1", dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"^fa\.attention: bias is on cuda:1 but q is on cuda:0$"):
        fa.attention(q, q, q, bias=bias)
