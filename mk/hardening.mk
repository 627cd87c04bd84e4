# Hardening targets: sanitizer builds and bounded fuzzing.
#   make -f Makefile.experiments sanitize   ASan+UBSan build: unit tests + MPI tests (-n 1, -n 2) + CLI
#                                           bad input; then TSan on the threaded tests (tsan-lap, mk/lpp.mk)
#   make -f Makefile.experiments fuzz       libFuzzer (clang) on the spec parser, IDX and XML readers
# FUZZ_SECONDS per target (default 60); crashes (ASan, UBSan: halt_on_error, hangs past
# FUZZ_TIMEOUT, allocations past -rss_limit_mb) land in tests/fuzz/crashes/ and must become
# regression inputs in tests/fuzz/corpus_*/ once fixed.
SAN_BUILD    ?= build-asan
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
# Seconds per input: a slower one is a hang (reported, saved as tests/fuzz/crashes/*timeout-*).
FUZZ_TIMEOUT ?= 10
# MPICH keeps allocations alive until exit by design: leak checking would only report
# the MPI library; UBSan findings abort the test (-fno-sanitize-recover).
SAN_ENV = ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

.PHONY: sanitize fuzz

sanitize: deps
	@cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWORKBENCH_SANITIZE=address \
	  -DWORKBENCH_BENCH=OFF > $(SAN_BUILD).configure.log 2>&1 || { cat $(SAN_BUILD).configure.log; exit 1; }
	cmake --build $(SAN_BUILD) -j$(JOBS) --target unit_tests mpi_tests workbench
	$(SAN_ENV) $(SAN_BUILD)/unit_tests -tse=needs_*
	$(SAN_ENV) $(MPIRUN) -n 1 $(SAN_BUILD)/mpi_tests
	$(SAN_ENV) $(MPIRUN) -n 2 $(SAN_BUILD)/mpi_tests
	$(SAN_ENV) bash tests/cli/test_bad_input.sh $(SAN_BUILD)/workbench .
	@echo "sanitize: ASan+UBSan clean (unit, MPI -n 1/-n 2, CLI bad input)"
	@$(MAKE) --no-print-directory -f Makefile.experiments tsan-lap
	@echo "sanitize: TSan clean (threaded real-mode tests: LAP/LPP updaters, Adaptive SGD dispatcher)"

fuzz:
	@WB_WITH_FUZZ=1 scripts/install-deps.sh
	@command -v clang++ >/dev/null || { echo "fuzz: needs clang with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)"; exit 1; }
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DWORKBENCH_FUZZ=ON -DWORKBENCH_TESTS=OFF \
	  -DWORKBENCH_BENCH=OFF -DWORKBENCH_NATIVE=OFF > $(FUZZ_BUILD).configure.log 2>&1 || \
	  { cat $(FUZZ_BUILD).configure.log; exit 1; }
	cmake --build $(FUZZ_BUILD) -j$(JOBS)
	@mkdir -p tests/fuzz/crashes $(FUZZ_BUILD)/fuzz-logs
	@for f in $(FUZZ_BUILD)/fuzz_*; do \
	  [ -f $$f ] && [ -x $$f ] || continue; \
	  n=$$(basename $$f); c=tests/fuzz/corpus_$${n#fuzz_}; log=$(FUZZ_BUILD)/fuzz-logs/$$n.log; \
	  mkdir -p $$c /tmp/wb-$$n-corpus; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    $$f -max_total_time=$(FUZZ_SECONDS) -timeout=$(FUZZ_TIMEOUT) -rss_limit_mb=2048 \
	    -max_len=65536 -artifact_prefix=tests/fuzz/crashes/$$n- /tmp/wb-$$n-corpus $$c > $$log 2>&1; rc=$$?; \
	  grep -E "^#[0-9]+.*(INITED|DONE)|Done [0-9]+ runs|ERROR|SUMMARY" $$log; \
	  if [ $$rc -ne 0 ]; then tail -n 60 $$log; echo "fuzz: $$n failed (exit $$rc; log $$log)"; exit 1; fi; \
	done
	@echo "fuzz: every target ran $(FUZZ_SECONDS) s with no crash"
