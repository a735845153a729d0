# make bench-gloo: murmur's 4-peer ring against the same D-PSGD in PyTorch
# over torch.distributed's gloo backend (scripts/bench-gloo.sh,
# scripts/gloo_dpsgd.py), interleaved, in rounds per second. PyTorch
# (Debian's python3-torch, as for bench-model) is the baseline only: no
# test needs it.
#   PAIRS=4  MODELS="default demo"  ROUNDS=60  DEMO_ROUNDS=200  WARMUP=10
#   MODES="tls plaintext"  ALONE_STEPS=30
.PHONY: bench-gloo
bench-gloo: all data $(BUILD)/tests/bench_model
	@$(call ensure_pkgs,python3-torch)
	@BUILD=$(BUILD) sh scripts/bench-gloo.sh
