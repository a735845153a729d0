"""Writes tests/fixtures/golden_tiny.bin: a reference computed by PyTorch (in
float64) for tests/test_model_golden.c. Run by hand, not by the tests:

    /usr/bin/python3 scripts/make_golden.py [out.bin]

The weights come from this script's own seeded numpy RNG (not from the C
init), so the fixture also checks that C reads the layout the way PyTorch's
modules are built. Weights and biases ~ N(0, 0.3), LayerNorm gains 1 + N(0,
0.3): with zero biases and unit gains some gradient bugs would not show.

File format (all little-endian, no padding):
  char[8]   magic "MMGOLD01"
  int32[7]  n_layer, d_model, n_head, n_ctx, B, T, n_steps
  int64     n_params
  float32[7] lr_max, lr_min, beta1, beta2, eps, weight_decay, grad_clip
  int32[2]  warmup_steps, total_steps
  uint8[B*(T+1)]   tokens (row b: inputs tokens[0..T-1], targets [1..T])
  float32[n_params] params, in the C layout (model/model.h)
  float32[B*T*256]  logits of the forward pass
  float32           loss (mean cross-entropy, natural log)
  float32[n_params] gradient of the loss, C layout
  float32[n_steps]  loss before each of n_steps AdamW updates (index 0 = the
                    loss above), the schedule/clip/decay of model/adamw.c
  float32[n_steps]  global gradient norm (before clipping) at each update
"""
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, LAYOUT, lr_at  # noqa: E402

L, C, NH, T_CTX = 2, 16, 2, 8
B, T = 2, 8
N_STEPS = 10
LR_MAX, LR_MIN, BETA1, BETA2, EPS, WD, CLIP = 1e-2, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1.0
WARMUP, TOTAL = 3, 10


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "golden_tiny.bin")
    rng = np.random.default_rng(20261129)
    parts = []
    for name, shape in LAYOUT:
        n = int(np.prod(shape(L, C, T_CTX)))
        x = rng.normal(0.0, 0.3, n)
        if name in ("ln1w", "ln2w", "lnfw"):
            x += 1.0
        parts.append(x)
    params = np.concatenate(parts).astype(np.float32)
    tokens = rng.integers(0, 256, size=(B, T + 1), dtype=np.uint8)

    torch.set_default_dtype(torch.float64)
    model = GPT(L, C, NH, T_CTX)
    model.load_flat(params.astype(np.float64))
    idx = torch.as_tensor(tokens[:, :-1].astype(np.int64))
    tgt = torch.as_tensor(tokens[:, 1:].astype(np.int64))

    logits, loss = model(idx, tgt)
    loss.backward()
    grads = model.flat(grad=True).numpy().copy()
    logits = logits.detach().numpy().copy()
    loss0 = loss.item()

    opt = torch.optim.AdamW(model.param_groups(WD), lr=LR_MAX, betas=(BETA1, BETA2), eps=EPS)
    plist = [p for g in opt.param_groups for p in g["params"]]
    losses, norms = [], []
    for step in range(N_STEPS):
        opt.zero_grad(set_to_none=True)
        _, loss = model(idx, tgt)
        loss.backward()
        losses.append(loss.item())
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in plist)).item()
        norms.append(norm)
        if CLIP > 0 and norm > CLIP:  # as model/adamw.c: scale by clip/norm
            for p in plist:
                p.grad.mul_(CLIP / norm)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, LR_MAX, LR_MIN, WARMUP, TOTAL)
        opt.step()
    assert abs(losses[0] - loss0) < 1e-12

    n_params = params.size
    with open(out, "wb") as f:
        f.write(b"MMGOLD01")
        f.write(struct.pack("<7i", L, C, NH, T_CTX, B, T, N_STEPS))
        f.write(struct.pack("<q", n_params))
        f.write(struct.pack("<7f", LR_MAX, LR_MIN, BETA1, BETA2, EPS, WD, CLIP))
        f.write(struct.pack("<2i", WARMUP, TOTAL))
        f.write(tokens.tobytes())
        f.write(params.astype("<f4").tobytes())
        f.write(logits.astype("<f4").tobytes())
        f.write(struct.pack("<f", loss0))
        f.write(grads.astype("<f4").tobytes())
        f.write(np.array(losses, dtype="<f4").tobytes())
        f.write(np.array(norms, dtype="<f4").tobytes())
    print(f"wrote {out}: {os.path.getsize(out)} bytes, {n_params} params, loss {loss0:.6f}")
    print("losses:", " ".join(f"{x:.5f}" for x in losses))
    print("grad norms:", " ".join(f"{x:.4f}" for x in norms))


if __name__ == "__main__":
    main()
