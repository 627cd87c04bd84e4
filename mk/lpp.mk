# LPP-SGD family (papers/lpp-sgd-scaling-the-wild.txt; DESIGN.md section 11, R7 and R8) and
# the ThreadSanitizer check of the real-mode LAP/LPP engine.
#   make -f Makefile.experiments lpp-table1      R7: Table 1 -> reports/lpp-table1.{md,csv,png}
#   make -f Makefile.experiments lpp-frequency   R8: Tables 3-4 -> reports/lpp-frequency.{md,csv,png}
#   make -f Makefile.experiments tsan-lap        TSan build of unit_tests, real-mode (threaded) cases
# Table 1's runs are not one cartesian sweep (the LR and schedule follow the method and the
# batch size), so they are four specs plus an ablation spec, merged by analysis/lpp_report.py.
# Every spec runs with LPP_NP ranks (2: one worker per rank, each rank's real-mode updaters
# share its core).
# Issue 20 (how a verdict is earned): every spec sweeps "seed": [1, 2, 3]; the report gives mean
# and 95% interval per cell and decides each claim by the intervals. To fit 3 seeds into ~25 min
# per target on 2 cores the Table 1 budget went from 10 to 4 epochs per run (Tables 3-4 stay at 4).
# Estimated full runtimes on 2 cores (mpirun -n 2), from the per-run wall times of the one-seed
# reports (3.7 s per run-epoch unloaded for lpp_frequency, 7.1 s for lpp_table1, whose real-mode
# and simulated LAP/LPP runs cost the most) times runs x epochs x seeds:
#   lpp-table1     15 cells x 3 seeds x 4 epochs = 180 run-epochs: ~11-23 min (12 Table 1 cells +
#                  3 ablation arms, lpp_table1_ablation.json)
#   lpp-frequency  16 cells x 3 seeds x 4 epochs = 192 run-epochs: ~12-21 min (6 Table 3 + 8 Table 4
#                  cells + 2 ablation arms, lpp_frequency_ablation.json)
# plus ~1-3 min of test evaluations (12 per Table 1 run, 0.15-0.3 s each). These are for an idle
# machine; on a shared one expect about twice as long (0.5-epoch runs timed while a compile ran,
# load ~6, took 1.8-2.5x the one-seed reports' per-run-epoch times).
LPP_NP      ?= 2
LPP_TABLE1  := lpp_table1_dp128 lpp_table1_dp1024 lpp_table1_lap lpp_table1_lpp lpp_table1_ablation
LPP_FREQ    := lpp_frequency lpp_frequency_k lpp_frequency_ablation
TSAN_BUILD  ?= build-tsan

.PHONY: lpp-table1 lpp-frequency tsan-lap

lpp-table1: build | $(OUT)
	@mkdir -p reports
	@for e in $(LPP_TABLE1); do \
	  echo "== $$e"; \
	  $(MPIRUN) -n $(LPP_NP) $(WB) run experiments/$$e.json -o $(OUT)/$$e.h5 --force --quiet || exit 1; \
	done
	$(PY) analysis/lpp_report.py table1 reports/lpp-table1 $(foreach e,$(LPP_TABLE1),$(OUT)/$(e).h5)

lpp-frequency: build | $(OUT)
	@mkdir -p reports
	@for e in $(LPP_FREQ); do \
	  echo "== $$e"; \
	  $(MPIRUN) -n $(LPP_NP) $(WB) run experiments/$$e.json -o $(OUT)/$$e.h5 --force --quiet || exit 1; \
	done
	$(PY) analysis/lpp_report.py frequency reports/lpp-frequency $(foreach e,$(LPP_FREQ),$(OUT)/$(e).h5)

# Only unit_tests is built (no benches, no workbench/mpi_tests), in its own tree, and only
# the real-mode cases run: they are the ones with threads ("lap real: ..." for LAP/LPP,
# "adaptive_sgd mode real: ..." for Adaptive SGD's dispatcher threads). ASLR is turned
# off for the run (setarch -R) because TSan's shadow mapping fails under the large mmap
# randomization of recent kernels ("unexpected memory mapping"). UCX_MEM_*: MPICH's UCX
# transport hooks madvise/mmap (libucm) and calls pthread_rwlock_rdlock from a dying
# thread's stack release, which crashes TSan's interceptor (SIGSEGV in
# __tsan::MutexPreReadLock); the unit tests never use UCX's memory registration.
tsan-lap: deps
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWORKBENCH_SANITIZE=thread \
	  -DWORKBENCH_BENCH=OFF -DWORKBENCH_NATIVE=ON > $(TSAN_BUILD).configure.log 2>&1 || \
	  { cat $(TSAN_BUILD).configure.log; exit 1; }
	cmake --build $(TSAN_BUILD) -j$(JOBS) --target unit_tests
	UCX_MEM_EVENTS=no UCX_MEM_MMAP_HOOK_MODE=none \
	TSAN_OPTIONS="halt_on_error=1 abort_on_error=1 second_deadlock_stack=1" \
	  setarch $$(uname -m) -R $(TSAN_BUILD)/unit_tests -tc="lap real*,adaptive_sgd mode real*"

# Part of `make test` (CI) since issue #8: a cold TSan build of unit_tests costs about
# 6 min on the 2-core CI machine, the run itself a few seconds.
EXTRA_TEST_TARGETS += tsan-lap
