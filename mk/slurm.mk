# mk/slurm.mk: the Slurm recipe (scripts/slurm/, docs/guide.md "Running on a cluster"), tested on a
# real single-node Slurm. Not part of `test`: it installs slurm-wlm and munge and
# starts daemons (~1-3 min on 2 cores).
#
#   make -f Makefile.experiments slurm-check            MPICH build ($(WB)), srun --mpi=pmi2
#   make -f Makefile.experiments slurm-check SLURM_WB=build-openmpi/workbench   Open MPI, pmix
#
# scripts/slurm/check.sh starts munged + slurmctld + slurmd (private config, state and ports
# in a temp dir), runs scripts/slurm/lenet_sweep.sbatch on a short LeNet-5 sweep via srun and
# via mpirun, preempts one job mid-sweep (scontrol requeue), checks that the requeued job
# resumes and ends with the same results as the uninterrupted one, runs the reproduction
# targets' job array (scripts/slurm/reproduce.sh) on two shrunk targets and compares every
# file with a plain mpirun of the spec, and stops every daemon it started. KEEP=1 keeps its
# temp dir (logs, results).

SLURM_WB ?= $(WB)
.PHONY: slurm-check

slurm-check: build
	bash scripts/slurm/check.sh $(SLURM_WB) .
