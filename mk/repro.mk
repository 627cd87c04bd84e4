# mk/repro.mk: every reproduction target at once, and its CI smoke.
#
#   make -f Makefile.experiments repro-smoke     every target (DESIGN.md section 11, R1-R10) in a
#                                                tiny mode (3 steps, 1 seed, cut lr grids) through
#                                                spec -> HDF5 -> report files in a temp dir (never
#                                                reports/); checks the files exist and parse, not the
#                                                verdicts. ~2-3 min on 2 cores. Part of `make test`.
#   make -f Makefile.experiments reproduce-all   every target for real into reports/ (adaptive-bibtex
#                                                only when ../shared/data/xml/bibtex exists), printing
#                                                each target's time and the total.

# REPRO_TARGETS: mk/targets.mk (generated from analysis/psgd_analysis/catalog.py).

.PHONY: repro-smoke reproduce-all

repro-smoke: build
	$(PY) scripts/repro_smoke.py --wb $(WB) --bench $(BUILD)/bench_collectives --mpirun "$(MPIRUN)" \
	  --np $(if $(filter 1,$(NP)),1,2)

reproduce-all: build
	@start=$$(date +%s); \
	for t in $(REPRO_TARGETS); do \
	  s=$$(date +%s); \
	  $(MAKE) --no-print-directory -f Makefile.experiments $$t || exit 1; \
	  echo "reproduce-all: $$t took $$(( $$(date +%s) - s )) s"; \
	done; \
	$(REPRO) index --out $(REPORTS); \
	echo "reproduce-all: $(words $(REPRO_TARGETS)) targets, total $$(( $$(date +%s) - start )) s"

EXTRA_TEST_TARGETS += repro-smoke
