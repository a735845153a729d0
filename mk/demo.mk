# make demo: the README's main job. Builds, fetches the data, trains 8 local
# peers on a ring and on an exponential graph (same seed, data and rounds;
# non-IID genre partition, where topologies differ most), and ends with the
# comparison table and the paths of the plots. A new runs/demo-TIME each
# time: earlier runs are never overwritten.
DEMO_PEERS  ?= 8
DEMO_TOPOS  ?= topologies/ring-$(DEMO_PEERS).topo topologies/exp-$(DEMO_PEERS).topo
DEMO_FLAGS  ?= --layers 2 --width 64 --heads 4 --ctx 64 --batch 16 --lr 3e-3 --min-lr 1e-4 \
               --rounds 200 --eval-every 25 --snapshot-every 25
DEMO_PORT   ?= 29500

# The trap keeps the recipe's shell alive on Ctrl-C until compare.sh has
# stopped its peers (make waits for that shell), instead of dying at once
# and giving the prompt back while the run is still stopping.
.PHONY: demo
demo: all data report-deps
	@trap 'exit 130' INT TERM HUP; \
	name=demo-$$(date +%Y%m%d-%H%M%S); \
	sh scripts/compare.sh -n $(DEMO_PEERS) -r $$name -p $(DEMO_PORT) -s 1 --partition genre \
	    $(DEMO_TOPOS) -- $(DEMO_FLAGS) && \
	echo && echo "demo: per-run reports: murmur report runs/$$name/<topology>; plots in runs/$$name/*/plots/"

# make bench-node: the time split of 4 peers on a ring (scripts/bench-node.sh).
.PHONY: bench-node
bench-node: all data
	@sh scripts/bench-node.sh
