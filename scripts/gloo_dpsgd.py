"""One peer of the PyTorch-gloo D-PSGD baseline for `make bench-gloo`
(scripts/bench-gloo.sh starts N of them on loopback).

    /usr/bin/python3 scripts/gloo_dpsgd.py --rank K --world N --port P [options]

What murmur node --algo dpsgd does on a ring (docs/node.md, "One round"),
written the way a PyTorch user would, with torch.distributed's gloo backend
(plain TCP) for the exchange:

  1. snapshot s = x, isend s to both ring neighbours, irecv theirs
     (gloo's own thread moves the bytes, as murmur's loop thread does);
  2. meanwhile one AdamW step on our own batch (forward, backward,
     global-norm clip 1.0, warm-up + cosine learning rate): x = x_t + D;
  3. wait for both sends and both receives;
  4. mix with the ring's Metropolis-Hastings weights, 1/3 each:
     x <- (s + x_left + x_right) / 3 + (x - s).

The model is scripts/gpt_torch.py (the golden test's reference), its
parameters views of one flat buffer so that the snapshot is one copy, like
murmur's; the data is the same prepared corpus (data/brown), the same iid
shard of it per peer (model/data_index.c's rule), B random windows of
ctx + 1 bytes per step. Every peer starts from the same initialisation
(--seed), samples its batches from its own stream (seed + rank).
torch.set_num_threads(--threads): murmur's peers run one BLAS thread each.

Prints one JSON line per round to stdout, with the field names of murmur's
metrics round line (docs/metrics.md: "round", "time" since the start,
cumulative "t_compute", "t_comm" (the mix), "t_wait"), and an end line with
"cpu_s" (the process's CPU seconds, all threads, gloo's included) and
"cpu_s_from" (CPU seconds at the end of round --cpu-from), so that the
caller can take steady-state rates after a warm-up."""
import argparse
import datetime
import json
import os
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT, lr_at  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, default=4)
    p.add_argument("--port", type=int, required=True, help="rendezvous port on 127.0.0.1")
    p.add_argument("--rounds", type=int, default=60)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ctx", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--data", default="data/brown")
    p.add_argument("--cpu-from", type=int, default=0,
                   help="also report CPU seconds at the end of this round")
    a = p.parse_args()
    if a.world < 3:
        p.error("--world must be at least 3 (a ring with two distinct neighbours)")
    if not 0 <= a.rank < a.world:
        p.error("--rank must be in 0..world-1")
    return a


def iid_shard(data_dir, rank, world):
    """This peer's training bytes: model/data_index.c's iid rule. Within each
    genre (first-seen order), in index order, files 0, 10, 20, ... are
    validation files; the genres' training files are dealt round-robin, the
    count carried from genre to genre; each file is followed by a newline."""
    rows = []
    with open(os.path.join(data_dir, "index.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, genre = line.rstrip("\n").split("\t")[:2]
            rows.append((name, genre))
    genres = list(dict.fromkeys(g for _, g in rows))
    mine, base = [], 0
    for g in genres:
        files = [n for n, gg in rows if gg == g]
        train = [n for i, n in enumerate(files) if i % 10 != 0]
        mine += [n for j, n in enumerate(train) if (base + j) % world == rank]
        base += len(train)
    mine_set = set(mine)
    parts = []
    for name, _ in rows:  # index order, as the shard holds them
        if name in mine_set:
            with open(os.path.join(data_dir, name + ".txt"), "rb") as f:
                parts.append(f.read() + b"\n")
    return torch.frombuffer(bytearray(b"".join(parts)), dtype=torch.uint8)


def flatten_params(model):
    """Make every parameter a view of one flat buffer; returns the buffer."""
    params = list(model.parameters())  # the tied wte once
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    off = 0
    for p in params:
        n = p.numel()
        p.data = flat[off:off + n].view_as(p)
        off += n
    return flat


def line(obj):
    """One metrics line, compact as murmur writes them."""
    print(json.dumps(obj, separators=(",", ":")), flush=True)


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=a.rank,
                            world_size=a.world, timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(a.seed)  # the same initialisation on every peer
    model = GPT(a.layers, a.width, a.heads, a.ctx)
    flat = flatten_params(model)
    opt = torch.optim.AdamW(model.param_groups(0.1), lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    data = iid_shard(a.data, a.rank, a.world)
    gen = torch.Generator().manual_seed(a.seed * 1000003 + a.rank)
    w = a.ctx + 1
    span = torch.arange(w)
    left, right = (a.rank - 1) % a.world, (a.rank + 1) % a.world
    weight = 1.0 / 3.0  # Metropolis-Hastings on a ring: every degree is 2
    snap = torch.empty_like(flat)
    from_left, from_right = torch.empty_like(flat), torch.empty_like(flat)
    total = a.rounds
    t_compute = t_comm = t_wait = 0.0
    cpu_from = None
    start = time.perf_counter()
    for r in range(a.rounds):
        snap.copy_(flat)
        reqs = [dist.isend(snap, left), dist.isend(snap, right),
                dist.irecv(from_left, left), dist.irecv(from_right, right)]
        t0 = time.perf_counter()
        offs = torch.randint(0, data.numel() - w + 1, (a.batch,), generator=gen)
        batch = data[offs[:, None] + span].long()
        for g in opt.param_groups:
            g["lr"] = lr_at(r, a.lr, a.lr / 10, min(a.warmup, total // 10), total)
        opt.zero_grad(set_to_none=True)
        _, loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t1 = time.perf_counter()
        for q in reqs:
            q.wait()
        t2 = time.perf_counter()
        with torch.no_grad():  # x <- W_ii s + W_il x_l + W_ir x_r + (x - s)
            flat.add_(from_left, alpha=weight).add_(from_right, alpha=weight)
            flat.add_(snap, alpha=-2 * weight)
        t3 = time.perf_counter()
        t_compute += t1 - t0
        t_wait += t2 - t1
        t_comm += t3 - t2
        if r == a.cpu_from:
            cpu_from = time.process_time()
        line({"ev": "round", "round": r, "time": round(t3 - start, 6),
              "loss": round(loss.item(), 6), "t_compute": round(t_compute, 6),
              "t_comm": round(t_comm, 6), "t_wait": round(t_wait, 6)})
    line({"ev": "end", "peer": a.rank, "round": a.rounds,
          "time": round(time.perf_counter() - start, 6), "cpu_s": round(time.process_time(), 3),
          "cpu_s_from": None if cpu_from is None else round(cpu_from, 3),
          "torch": torch.__version__})
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
