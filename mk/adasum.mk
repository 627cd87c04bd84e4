# mk/adasum.mk: the Adasum papers' tables and figures, one target each (issue 7;
# DESIGN.md section 11, R1-R6), the curve regression and its goldens.
#
#   make -f Makefile.experiments adasum-lenet          R1  ~13 min (168 LeNet-5 runs: 1 epoch, 7 lr, 3 seeds; + 12 equal-steps ablation runs)
#   make -f Makefile.experiments adasum-seq-error      R2  ~5 min (3 seeds)
#   make -f Makefile.experiments adasum-orthogonality  R3  ~1 min
#   make -f Makefile.experiments adasum-latency        R4  ~1-2 min    (bench_collectives, 2 ranks)
#   make -f Makefile.experiments adasum-toy            R5  ~2-3 min    (1200 toy runs)
#   make -f Makefile.experiments adasum-optimizers     R6  ~4 min (90 runs: 5 lr x 3 seeds x 6 arms)
#   make -f Makefile.experiments adasum-all            all six + reports/README.md (~27 min)
#   make -f Makefile.experiments regress               golden-curve check (also run by `test`)
#   make -f Makefile.experiments golden WHY="..."      regenerate tests/golden/*.json deliberately
#
# Each report target writes reports/<target>.md/.csv/.png through analysis/reproduce.py and
# regenerates reports/README.md. Results files are reports/<spec>.h5 (git-ignored): they are
# re-made when older than their spec or the workbench binary; REUSE=1 keeps any existing one
# (e.g. after an unrelated rebuild), `rm reports/<spec>.h5` forces a rerun.

REPORTS ?= reports
REPRO    = $(PY) analysis/reproduce.py
WB_DEP   = $(if $(REUSE),,$(WB))

ADASUM_TARGETS := adasum-lenet adasum-seq-error adasum-orthogonality adasum-latency \
                  adasum-toy adasum-optimizers
.PHONY: $(ADASUM_TARGETS) adasum-all adasum-index regress golden

$(REPORTS):
	mkdir -p $(REPORTS)

# One results file per spec. Called through a sub-make after `build`, so the binary's
# timestamp is read after it was (re)built.
$(REPORTS)/%.h5: experiments/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n $(NP) $(WB) run $< -o $@ --force

# The toys include W = 1 (the single-worker reference), so they run on one rank: their cost
# is the per-run HDF5 commit, not compute, and more ranks would not help.
$(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5: $(REPORTS)/%.h5: experiments/%.json $(WB_DEP) | $(REPORTS)
	$(MPIRUN) -n 1 $(WB) run $< -o $@ --force --quiet

H5 = $(MAKE) --no-print-directory -f Makefile.experiments

adasum-lenet: build | $(REPORTS)
	@$(H5) $(REPORTS)/lenet_sweep.h5 $(REPORTS)/lenet_sweep_ablation.h5
	$(REPRO) $@ $(REPORTS)/lenet_sweep.h5 $(REPORTS)/lenet_sweep_ablation.h5 --out $(REPORTS)

adasum-seq-error: build | $(REPORTS)
	@$(H5) $(REPORTS)/seq_emulation.h5
	$(REPRO) $@ $(REPORTS)/seq_emulation.h5 --out $(REPORTS)

adasum-orthogonality: build | $(REPORTS)
	@$(H5) $(REPORTS)/orthogonality.h5
	$(REPRO) $@ $(REPORTS)/orthogonality.h5 --out $(REPORTS)

adasum-optimizers: build | $(REPORTS)
	@$(H5) $(REPORTS)/optimizers.h5
	$(REPRO) $@ $(REPORTS)/optimizers.h5 --out $(REPORTS)

adasum-toy: build | $(REPORTS)
	@$(H5) $(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5
	$(REPRO) $@ $(REPORTS)/adasum_toy.h5 $(REPORTS)/adasum_toy_cubic.h5 --out $(REPORTS)

# R4 always re-measures (a benchmark, not a cached result); its raw output is kept beside
# the report as reports/adasum-latency.txt. Two ranks: the paper's comparison is between
# ranks, and this machine has two cores.
adasum-latency: build | $(REPORTS)
	@start=$$(date +%s); \
	$(MPIRUN) -n 2 $(BUILD)/bench_collectives > $(REPORTS)/adasum-latency.txt.tmp || exit 1; \
	mv $(REPORTS)/adasum-latency.txt.tmp $(REPORTS)/adasum-latency.txt; \
	cat $(REPORTS)/adasum-latency.txt; \
	$(REPRO) $@ $(REPORTS)/adasum-latency.txt --out $(REPORTS) --elapsed $$(( $$(date +%s) - start ))

adasum-all: $(ADASUM_TARGETS)
	$(REPRO) index --out $(REPORTS)

adasum-index:
	$(REPRO) index --out $(REPORTS)

# --- curve regression (tests/golden/README.md) -----------------------------------------
# Runs the golden specs (toy square; LeNet-5, 4 workers, 100 steps; sync SGD and Adasum)
# on $(NP) ranks (at most 2 here) and fails naming the run and step outside its band.
regress: build
	$(PY) analysis/regress.py check --wb $(WB) --mpirun "$(MPIRUN)" --np $(if $(filter 1,$(NP)),1,2)

# Regenerate the goldens on purpose; say why (recorded in the files and in the commit).
golden: build
	$(PY) analysis/regress.py generate --wb $(WB) --mpirun "$(MPIRUN)" --np 2 --why "$(WHY)"

EXTRA_TEST_TARGETS += regress
