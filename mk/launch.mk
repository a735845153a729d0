# Launch paths (docs/launching.md): the packages their end-to-end tests use.
#   make launch-deps   ssh server/client, Open MPI's mpirun, iproute2, Slurm and munge
.PHONY: launch-deps
launch-deps:
	@$(call ensure_pkgs,openssh-server openssh-client openmpi-bin iproute2 slurmctld slurmd slurm-client munge)
