#!/usr/bin/env bash
# The kill -9 torture test at mpirun -n 2 with rank groups (W = 1: the two ranks run different
# runs at once; rank 0 journals rank 1's runs as they arrive): kills hit rank 0, rank 1 or
# mpirun; the finished file must equal the uninterrupted -n 1 sweep bit for bit, and no run
# rank 0 reported completed may be lost. See test_torture.sh.
# usage: test_torture_groups.sh WORKBENCH SOURCE_DIR [SEED]
NP=2 exec bash "$(dirname "$0")/test_torture.sh" "$@"
