# make demo: the README's main job. Builds, fetches the data, and runs the
# sweep DEMO_SPEC (default sweeps/baselines-8.sweep: 8 local peers, non-IID
# genre partition, the two baselines -- local, no communication, and
# complete, exact averaging -- against a ring and an exponential graph, two
# seeds each), then ends with its table (mean ± sd over the seeds) and the
# accuracy-against-consensus-distance plot. A new runs/demo-TIME each time:
# earlier runs are never overwritten. docs/study.md is the long version.
DEMO_SPEC   ?= sweeps/baselines-8.sweep
DEMO_PORT   ?= 29500
# The default demo ends by checking README.md's table against its own
# (scripts/demo-table.sh check: every column but wall_s) and fails loudly
# when they differ; `make demo-readme` writes its table there instead.
DEMO_TABLE  ?= check

# The trap keeps the recipe's shell alive on Ctrl-C until the sweep has
# stopped its peers (make waits for that shell), instead of dying at once
# and giving the prompt back while the run is still stopping.
.PHONY: demo demo-readme
demo-readme:
	@$(MAKE) --no-print-directory demo DEMO_TABLE=write

demo: all data report-deps
	@trap 'exit 130' INT TERM HUP; \
	name=demo-$$(date +%Y%m%d-%H%M%S); \
	sh scripts/sweep.sh -r $$name -p $(DEMO_PORT) $(DEMO_SPEC) && \
	if [ "$(DEMO_SPEC)" = sweeps/baselines-8.sweep ]; then \
	  sh scripts/demo-table.sh table runs/$$name > runs/$$name/demo-table.txt && \
	  sh scripts/demo-table.sh $(DEMO_TABLE) runs/$$name/demo-table.txt README.md; \
	fi && \
	echo && echo "demo: accuracy against consensus distance: runs/$$name/plots/sweep_acc_consensus.png" && \
	echo "demo: per-run reports: murmur report runs/$$name/<setting>/s<seed>; how to read it: README.md, section 1"

# make bench-node: the time split of 4 peers on a ring (scripts/bench-node.sh).
.PHONY: bench-node
bench-node: all data
	@sh scripts/bench-node.sh
