#!/usr/bin/python3
"""Write one reproduction report (reports/<target>.{md,csv,png}) and regenerate the index.

usage:
  reproduce.py adasum-lenet         RESULTS.h5 [ABLATION.h5] [--out reports]  (lenet_sweep[_ablation])
  reproduce.py adasum-seq-error     RESULTS.h5
  reproduce.py adasum-orthogonality RESULTS.h5
  reproduce.py adasum-optimizers    RESULTS.h5
  reproduce.py adasum-toy           RESULTS.h5 [RESULTS.h5 ...]   (square + cubic files)
  reproduce.py adasum-latency       BENCH_OUTPUT.txt      [--elapsed SECONDS]
  reproduce.py index                                      (only regenerate reports/README.md)
  reproduce.py readme-section                             (print the README section text)

Called by mk/adasum.mk; see analysis/psgd_analysis/targets.py for what each report checks.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from psgd_analysis import targets, write_index  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=sorted(targets.TARGETS) + ["index", "readme-section"])
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--out", default="reports")
    ap.add_argument("--elapsed", type=float, default=None, help="measured seconds (latency)")
    a = ap.parse_args(argv)
    if a.target == "readme-section":
        print(targets.README_SECTION)
        return 0
    if a.target != "index":
        if not a.inputs:
            ap.error(f"{a.target} needs its input file(s)")
        missing = [p for p in a.inputs if not os.path.exists(p)]
        if missing:
            ap.error(f"missing input: {', '.join(missing)}")
        fn = targets.TARGETS[a.target]
        if a.target == "adasum-toy":
            rep = fn(a.inputs)
        elif a.target == "adasum-lenet":
            rep = fn(a.inputs[0], a.inputs[1] if len(a.inputs) > 1 else None)
        elif a.target == "adasum-latency":
            rep = fn(a.inputs[0], a.elapsed)
        else:
            rep = fn(a.inputs[0])
        paths = rep.write(a.out)
        with open(paths["md"]) as fh:
            text = fh.read()
        # the verdicts and key tables on stdout, so make's log shows the result
        print(text.split("\n![")[0])
        print("wrote " + ", ".join(paths.values()))
    idx = write_index(a.out, preamble=targets.README_SECTION.split("\n", 2)[2])
    print(f"wrote {idx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
