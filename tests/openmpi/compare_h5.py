#!/usr/bin/python3
"""Compare two workbench results files run by run (tests/openmpi/test_openmpi.sh).

usage: compare_h5.py exact|tol A.h5 B.h5 [LABEL]
Every run must be present and completed in both; every curve except wall_s (this machine's
clock) and /runs/<id>/final_params must be equal: bit for bit (exact), or to rtol 1e-6 (tol).
"""
import sys

import h5py
import numpy as np


def same(x, y, mode):
    if x.shape != y.shape:
        return False
    if mode == "exact":
        return np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
    m = ~np.isnan(x)
    return bool((m == ~np.isnan(y)).all() and np.allclose(x[m], y[m], rtol=1e-6, atol=1e-12))


def main():
    mode, fa, fb = sys.argv[1:4]
    label = sys.argv[4] if len(sys.argv) > 4 else f"{fa} vs {fb}"
    with h5py.File(fa, "r") as a, h5py.File(fb, "r") as b:
        runs = sorted(a["runs"])
        assert runs and runs == sorted(b["runs"]), (runs, sorted(b["runs"]))
        differ, nseries, nparams = [], 0, 0
        for rid in runs:
            ga, gb = a["runs"][rid], b["runs"][rid]
            for g in (ga, gb):
                assert g.attrs["status"] == "completed", (rid, g.attrs["status"])
            ca, cb = ga["curves"], gb["curves"]
            assert sorted(ca) == sorted(cb), (rid, sorted(ca), sorted(cb))
            for k in ca:
                if k == "wall_s":
                    continue
                nseries += 1
                if not same(ca[k][()], cb[k][()], mode):
                    differ.append((rid, "curves/" + k))
            assert ("final_params" in ga) == ("final_params" in gb), rid
            if "final_params" in ga:
                pa, pb = ga["final_params"], gb["final_params"]
                # a dataset, or a group of per-tensor datasets
                items = [("", pa, pb)] if isinstance(pa, h5py.Dataset) else \
                        [(n, pa[n], pb[n]) for n in sorted(pa)]
                assert isinstance(pa, h5py.Dataset) or sorted(pa) == sorted(pb), rid
                for n, x, y in items:
                    nparams += x.size
                    if not same(x[()], y[()], mode):
                        differ.append((rid, "final_params" + ("/" + n if n else "")))
    if differ:
        print(f"FAIL {label}: {len(differ)} series differ ({mode}): {differ[:8]}")
        return 1
    print(f"{label}: {len(runs)} runs, {nseries} curves and {nparams} final parameters "
          f"{'bit-identical' if mode == 'exact' else 'equal within rtol 1e-6'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
