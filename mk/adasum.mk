# mk/adasum.mk: what the reproduction rules share (REPORTS, REPRO, the per-spec results
# rule), adasum-all, the curve regression and its goldens. The per-target rules are generated
# from analysis/psgd_analysis/catalog.py into mk/targets.mk (DESIGN.md section 11).
#
#   make -f Makefile.experiments adasum-all            R1-R6 + reports/README.md
#   make -f Makefile.experiments regress               golden-curve check (also run by `test`)
#   make -f Makefile.experiments golden WHY="..."      regenerate tests/golden/*.json deliberately
#                                                     (from the fixtures tests/golden/specs/*.json)
#
# Results files are reports/<spec>.h5 (git-ignored): they are
# re-made when older than their spec or the workbench binary; REUSE=1 keeps any existing one
# (e.g. after an unrelated rebuild), `rm reports/<spec>.h5` forces a rerun.

REPORTS ?= reports
REPRO    = PSGD_WB=$(WB) $(PY) analysis/reproduce.py
WB_DEP   = $(if $(REUSE),,$(WB))

ADASUM_TARGETS := adasum-lenet adasum-seq-error adasum-orthogonality adasum-latency \
                  adasum-toy adasum-optimizers
.PHONY: $(ADASUM_TARGETS) adasum-all adasum-index regress golden

$(REPORTS):
	mkdir -p $(REPORTS)

# One results file per spec: the rules are in mk/targets.mk, one per spec folder
# (experiments/<paper>/), generated from the catalog, whose spec_path says where each spec lives.
# They are called through a sub-make after `build`, so the binary's timestamp is read after it
# was (re)built. A journal beside the file means an earlier run was interrupted (the machine
# stopped, Ctrl-C, kill -9): that run goes on with --resume and keeps every run it finished
# (`rm` the journal or the file to start over).

H5 = $(MAKE) --no-print-directory -f Makefile.experiments

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
