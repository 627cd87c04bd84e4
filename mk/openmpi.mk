# mk/openmpi.mk: the second MPI family. `test` also builds the workbench against
# Open MPI (-DWORKBENCH_MPI=openmpi) in $(OMPI_BUILD) and runs tests/openmpi/test_openmpi.sh:
# mpi_tests and the determinism CLI test at -n 2 under Open MPI's mpirun, rank invariance at
# -n 4 --oversubscribe, and the same specs under MPICH ($(WB)) and Open MPI compared bit for
# bit. Only the targets those need are built (no benches, no CUDA). Measured on the 2-core
# machine: 2 min in all with a warm ccache (configure + build ~1 min, tests ~1 min); a cold
# ccache adds ~5 min of compiling.
#
#   make -f Makefile.experiments openmpi-test
#
# Open MPI refuses to run as root without --allow-run-as-root (CI runs as root); OMPIRUN
# overrides the launcher, e.g. OMPIRUN="mpirun.openmpi --mca btl self,vader".

OMPI_BUILD ?= build-openmpi
OMPIRUN    ?= $(if $(shell command -v mpirun.openmpi 2>/dev/null),mpirun.openmpi,mpirun) --allow-run-as-root
.PHONY: openmpi-build openmpi-test

openmpi-build: deps
	@cmake -S . -B $(OMPI_BUILD) -DCMAKE_BUILD_TYPE=Release -DWORKBENCH_MPI=openmpi \
	  -DWORKBENCH_BENCH=OFF -DWORKBENCH_CUDA=OFF > $(OMPI_BUILD).configure.log 2>&1 || \
	  { cat $(OMPI_BUILD).configure.log; exit 1; }
	@grep -h "WORKBENCH_MPI=" $(OMPI_BUILD).configure.log
	cmake --build $(OMPI_BUILD) -j$(JOBS) --target workbench mpi_tests

openmpi-test: build openmpi-build
	OMPIRUN="$(OMPIRUN)" MPICHRUN="$(MPIRUN)" bash tests/openmpi/test_openmpi.sh $(OMPI_BUILD) $(WB) .

EXTRA_TEST_TARGETS += openmpi-test
