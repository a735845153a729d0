"""Baseline for `make bench-model`: the same model and training step
(forward, backward, global-norm clip, AdamW) in PyTorch on the CPU.

    /usr/bin/python3 scripts/bench_torch.py THREADS [STEPS] [B] [T]

Prints key=value lines like tests/bench_model.c, tokens per wall second and
per CPU second (every thread's). The caller sets
OPENBLAS_NUM_THREADS (and OPENBLAS_CORETYPE when comparing kernels) in the
environment; this sets torch's own thread count to THREADS. A run stops
early after BENCH_MAX_SECONDS (default 20) once it has 5 timed steps:
oversubscribed threads on a loaded machine can make steps take seconds."""
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch import GPT  # noqa: E402


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    B = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    T = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    torch.set_num_threads(threads)
    torch.manual_seed(1337)
    model = GPT(4, 128, 4, 64)
    opt = torch.optim.AdamW(model.param_groups(0.1), lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    data = torch.randint(0, 256, (B, T + 1))
    x, y = data[:, :-1], data[:, 1:]
    times, cpu_times = [], []
    budget = float(os.environ.get("BENCH_MAX_SECONDS", "20"))
    start = time.perf_counter()
    for s in range(steps + 3):
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if s >= 3:
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
            if len(times) >= 5 and time.perf_counter() - start > budget:
                break
    step = statistics.median(times)
    print(f"torch={torch.__version__} threads={torch.get_num_threads()} B={B} T={T} "
          f"steps={len(times)}")
    print(f"step_ms={step * 1e3:.2f} loss={loss.item():.4f}")
    print(f"tokens_per_s={B * T / step:.0f}")
    # per CPU second of the whole process (all threads): steady under load
    print(f"tokens_per_cpu_s={B * T / statistics.median(cpu_times):.0f}")


if __name__ == "__main__":
    main()
