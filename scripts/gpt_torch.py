"""The murmur model (model/model.c) in PyTorch, for the benchmark baseline
(scripts/bench_torch.py) and the golden test fixture (scripts/make_golden.py).

Same architecture as the C code: GPT-2 with learned positions, pre-LayerNorm
blocks (eps 1e-5), tanh-approximated GELU, LM head tied to wte, vocab 256.
`load_flat` / `flat` convert from and to the C parameter layout (the order
of model/model.h's mm_tensors, per-layer tensors stacked over layers)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256

# name, shape given (L, C, T): the C layout, in order
LAYOUT = [
    ("wte", lambda L, C, T: (VOCAB, C)),
    ("wpe", lambda L, C, T: (T, C)),
    ("ln1w", lambda L, C, T: (L, C)),
    ("ln1b", lambda L, C, T: (L, C)),
    ("qkvw", lambda L, C, T: (L, 3 * C, C)),
    ("qkvb", lambda L, C, T: (L, 3 * C)),
    ("attprojw", lambda L, C, T: (L, C, C)),
    ("attprojb", lambda L, C, T: (L, C)),
    ("ln2w", lambda L, C, T: (L, C)),
    ("ln2b", lambda L, C, T: (L, C)),
    ("fcw", lambda L, C, T: (L, 4 * C, C)),
    ("fcb", lambda L, C, T: (L, 4 * C)),
    ("fcprojw", lambda L, C, T: (L, C, 4 * C)),
    ("fcprojb", lambda L, C, T: (L, C)),
    ("lnfw", lambda L, C, T: (C,)),
    ("lnfb", lambda L, C, T: (C,)),
]
MATRICES = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}  # weight-decayed


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.attproj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)

    def forward(self, x, mask):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(mask[:T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attproj(y)
        x = x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x


class GPT(nn.Module):
    def __init__(self, n_layer, d_model, n_head, n_ctx):
        super().__init__()
        self.L, self.C, self.NH, self.T = n_layer, d_model, n_head, n_ctx
        self.wte = nn.Embedding(VOCAB, d_model)
        self.wpe = nn.Embedding(n_ctx, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head) for _ in range(n_layer)])
        self.lnf = nn.LayerNorm(d_model, eps=1e-5)
        self.register_buffer("mask", torch.tril(torch.ones(n_ctx, n_ctx)))
        std = 0.02
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name:
                nn.init.ones_(p)
            else:
                s = std / math.sqrt(2 * n_layer) if "proj.weight" in name else std
                nn.init.normal_(p, 0.0, s)

    def forward(self, idx, targets):
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x, self.mask)
        logits = self.lnf(x) @ self.wte.weight.t()
        loss = F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))
        return logits, loss

    def tensors(self):
        """name -> list of torch parameters making up that C tensor."""
        b = self.blocks
        return {
            "wte": [self.wte.weight], "wpe": [self.wpe.weight],
            "ln1w": [x.ln1.weight for x in b], "ln1b": [x.ln1.bias for x in b],
            "qkvw": [x.qkv.weight for x in b], "qkvb": [x.qkv.bias for x in b],
            "attprojw": [x.attproj.weight for x in b], "attprojb": [x.attproj.bias for x in b],
            "ln2w": [x.ln2.weight for x in b], "ln2b": [x.ln2.bias for x in b],
            "fcw": [x.fc.weight for x in b], "fcb": [x.fc.bias for x in b],
            "fcprojw": [x.fcproj.weight for x in b], "fcprojb": [x.fcproj.bias for x in b],
            "lnfw": [self.lnf.weight], "lnfb": [self.lnf.bias],
        }

    def load_flat(self, vec):
        """Copy a flat vector in the C layout into the parameters."""
        off = 0
        t = self.tensors()
        with torch.no_grad():
            for name, _ in LAYOUT:
                for p in t[name]:
                    n = p.numel()
                    p.copy_(torch.as_tensor(vec[off:off + n]).view_as(p))
                    off += n
        assert off == len(vec), (off, len(vec))

    def flat(self, grad=False):
        """The parameters (or their gradients) as a flat vector in the C layout."""
        t = self.tensors()
        parts = []
        for name, _ in LAYOUT:
            for p in t[name]:
                parts.append((p.grad if grad else p).detach().reshape(-1))
        return torch.cat(parts)

    def param_groups(self, weight_decay):
        """AdamW groups: decay on the 2-D matrices only, as in model/adamw.c."""
        t = self.tensors()
        decay = [p for n in t if n in MATRICES for p in t[n]]
        other = [p for n in t if n not in MATRICES for p in t[n]]
        return [{"params": decay, "weight_decay": weight_decay},
                {"params": other, "weight_decay": 0.0}]


def lr_at(step, lr_max, lr_min, warmup, total):
    """model/adamw.c mm_adamw_lr."""
    if step < warmup:
        return lr_max * (step + 1) / warmup
    span = total - warmup
    if span <= 0:
        return lr_max
    ratio = min(1.0, (step - warmup) / span)
    return lr_min + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr_max - lr_min)
