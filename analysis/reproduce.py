#!/usr/bin/python3
"""Write one reproduction report (reports/<target>.{md,csv,png}) and regenerate the index.
Every target of analysis/psgd_analysis/catalog.py goes through here (the make rules in
mk/targets.mk are generated from the same table).

usage:
  reproduce.py TARGET INPUT [INPUT ...] [--out reports] [--elapsed SECONDS]
      INPUTs: the target's results files in the order of its specs (catalog.Target.specs);
      adasum-latency: the bench_collectives output and --elapsed
  reproduce.py index            only regenerate reports/README.md
  reproduce.py readme-section   print docs/reproducing.md (the target table from the catalog)
  reproduce.py make-rules       print mk/targets.mk
  reproduce.py list             the targets, one a line: name, specs, ranks
  reproduce.py spec-path SPEC [SPEC ...]
      where each spec lives (catalog.spec_path), one a line; a generated spec missing here is
      written first by its script, as make does
  reproduce.py reclassify TARGET [--note TEXT]
      pass an existing reports/TARGET.md through the engine again (protocol table, provenance,
      five-class verdicts) without its results files: the statistics are not recomputed, and
      the note (default: says so) is shown in the report

After the target's writer, report.finish adds the protocol table, the provenance and the
five-class verdicts (DESIGN.md section 11) to the report and its index record.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from psgd_analysis import catalog, write_index  # noqa: E402
from psgd_analysis.report import finish  # noqa: E402
from psgd_analysis.reproducing_page import INDEX_NOTE, README_SECTION  # noqa: E402

def run_target(t, inputs, out, elapsed=None):
    """Call the target's report function (catalog.Target.report) with its inputs, write the
    report through the engine (Report.write); return the .md path."""
    fn = t.report_fn()
    if t.report == "psgd_analysis.adasum_latency:latency":
        rep = fn(inputs[0], elapsed)
    elif t.report in ("psgd_analysis.adasum_lenet:lenet",
                      "psgd_analysis.adasum_orthogonality:orthogonality"):  # orthogonality: LeNet-5, then the ResNet arm
        rep = fn(*inputs)
    elif t.report == "psgd_analysis.adasum_seq_error:seq_error":
        rep = fn(inputs[0])
    elif t.report in ("psgd_analysis.adaptive_figures:figures",
                      "psgd_analysis.adaptive_sensitivity:sensitivity"):  # the main file, the target, the lr searches
        rep = fn(inputs[0], t.name, *inputs[1:])
    else:  # toy, optimizers, lpp, a new target: fn(all inputs)
        rep = fn(inputs)
    rep.target = t.name
    return rep.write(out)["md"]


def index(out):
    return write_index(out, preamble=INDEX_NOTE)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=catalog.ORDER + ["index", "readme-section", "make-rules", "list", "reclassify", "spec-path"])
    ap.add_argument("inputs", nargs="*")
    ap.add_argument("--out", default="reports")
    ap.add_argument("--elapsed", type=float, default=None, help="measured seconds (latency)")
    ap.add_argument("--note", default=None, help="reclassify: the note shown in the report")
    a = ap.parse_args(argv)
    if a.target == "reclassify":
        for name in a.inputs:
            t = catalog.get(name)
            md = os.path.join(a.out, t.name + ".md")
            if not os.path.exists(md):
                ap.error(f"reclassify: {md} does not exist")
            note = a.note or ("its results files were not available when this report was last passed "
                              "through the engine: the tables and the data's verdicts are those of the "
                              "earlier run (their statistics not recomputed); the classes, protocol table "
                              "and provenance are the engine's")
            finish(md, t.name, (), note)
            print(f"reclassified {md}")
        print(f"wrote {index(a.out)}")
        return 0
    if a.target == "readme-section":
        print(README_SECTION)
        return 0
    if a.target == "make-rules":
        print(catalog.make_rules())
        return 0
    if a.target == "spec-path":
        catalog.ensure_specs(a.inputs)
        for s in a.inputs:
            path = catalog.spec_path(s)
            if not os.path.exists(path):
                ap.error(f"spec-path: no spec {s!r} in {', '.join(catalog.SPEC_DIRS)}")
            print(path)
        return 0
    if a.target == "list":
        for t in catalog.TARGETS:
            print(t.name, ",".join(t.specs) or "-", t.ranks)
        return 0
    if a.target != "index":
        t = catalog.get(a.target)
        if not a.inputs:
            ap.error(f"{a.target} needs its input file(s): " + (" ".join(catalog.h5_paths(t)) or "the bench output"))
        missing = [p for p in a.inputs if not os.path.exists(p)]
        if missing:
            ap.error(f"missing input: {', '.join(missing)}")
        os.makedirs(a.out, exist_ok=True)
        md = run_target(t, a.inputs, a.out, a.elapsed)
        finish(md, t.name, a.inputs)
        with open(md) as fh:
            text = fh.read()
        # the verdicts and key tables on stdout, so make's log shows the result
        print(text.split("\n![")[0])
        print(f"wrote {md}")
    print(f"wrote {index(a.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
