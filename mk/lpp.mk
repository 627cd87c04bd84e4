# mk/lpp.mk: the ThreadSanitizer check of the real-mode LAP/LPP engine. The LPP targets
# (lpp-table1, lpp-frequency: R7, R8) are generated from analysis/psgd_analysis/catalog.py into
# mk/targets.mk.
#   make -f Makefile.experiments tsan-lap        TSan build of unit_tests, real-mode (threaded) cases
TSAN_BUILD  ?= build-tsan

.PHONY: tsan-lap

# Only unit_tests is built (no benches, no workbench/mpi_tests), in its own tree, and only
# the real-mode cases run: they are the ones with threads ("lap real: ..." for LAP/LPP,
# "adaptive_sgd mode real: ..." for Adaptive SGD's dispatcher threads, "event kernel real: ..."
# for the kernel's ActorThreads that both run on; "rvhdd over the loopback transport" for the
# in-process transport's rank threads, float only: the double case runs the same messages). ASLR is turned
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
	  setarch $$(uname -m) -R $(TSAN_BUILD)/unit_tests -tc="lap real*,adaptive_sgd mode real*,event kernel real*,rvhdd over the loopback transport*(float),rvhdd over the loopback transport: the sum*"

# Part of `make test` (CI), because LAP's updaters race by design and only TSan tells a
# benign race from a bug: a cold TSan build of unit_tests costs about
# 6 min on the 2-core CI machine, the run itself a few seconds.
EXTRA_TEST_TARGETS += tsan-lap
