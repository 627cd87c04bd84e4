#!/usr/bin/python3
"""The one table of reproduction targets (analysis/psgd_analysis/catalog.py) against what is
generated or checked from it: mk/targets.mk, the table of docs/reproducing.md, repro-smoke's targets, the
report index order, the specs on disk, and that no other make fragment defines a target's rule.
Run: /usr/bin/python3 -m unittest tests/analysis/test_catalog.py -v
"""
import dataclasses
import glob
import os
import re
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "analysis"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from psgd_analysis import catalog, report  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402


class Catalog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # the generated specs (git-ignored) as make writes them: a clean clone has none yet
        catalog.ensure_specs([s for g in catalog.GENERATED for s in g.specs])

    def test_lpp_rule_numbers_come_from_the_profiles(self):
        # The R7/R8 rule texts quote L, b and U* = 1 + L/(b B_loc); they are read from the committed
        # profile, so a changed profile changes them. Check against a profile written here.
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            rel = os.path.join(d, "p.json")  # absolute: os.path.join(ROOT, rel) keeps it
            with open(rel, "w") as fh:
                json.dump({"compute": {"m": [{"max_batch": 32.0, "fixed_s": 9.0, "per_sample_s": 9.0},
                                             {"max_batch": 1e18, "fixed_s": 0.001, "per_sample_s": 2.5e-6}]}}, fh)
            self.assertEqual(catalog._batch_cost(rel, "m", 128), (0.001, 2.5e-6))
            self.assertEqual(catalog._batch_cost(rel, "m", 8), (9.0, 9.0))
            # U* = 1 + 1 ms / (2.5 us x 128) = 4.125; at 256: 2.5625
            self.assertEqual(catalog._lpp_cost_text(rel, "m", "the"),
                             "the L = 1.00 ms and b = 2.50 us x B_loc, U* = 4.1 at B_loc 128 and 2.6 at 256")
            # an install without the profiles: the catalog still imports, and its text says what is missing
            gone = os.path.join(d, "absent.json")
            self.assertTrue(all(x != x for x in catalog._batch_cost(gone, "m")))
            self.assertIn("not found", catalog._lpp_cost_text(gone, "m", "the"))
        frequency = catalog.BY_NAME["lpp-frequency"]
        L, b = catalog._batch_cost("calib/lpp-gpu-h200.json" if catalog.LPP_PLATEAU else "calib/h200-cuda.json",
                                   "lenet5_classic" if catalog.LPP_PLATEAU else "lenet5")
        self.assertIn("U* = {:.1f} at B_loc 128".format(1 + L / (b * 128)), frequency.rules[0].why)

    def test_make_rules_are_generated(self):
        with open(os.path.join(ROOT, "mk", "targets.mk")) as fh:
            self.assertEqual(fh.read().rstrip("\n"), catalog.make_rules().rstrip("\n"),
                             "mk/targets.mk is stale: /usr/bin/python3 analysis/reproduce.py make-rules > mk/targets.mk")

    def test_no_other_fragment_defines_a_target(self):
        for mk in glob.glob(os.path.join(ROOT, "mk", "*.mk")):
            if mk.endswith("targets.mk"):
                continue
            with open(mk) as fh:
                text = fh.read()
            for t in catalog.TARGETS:
                self.assertIsNone(re.search(rf"^{re.escape(t.name)}\s*:", text, re.M),
                                  f"{mk} defines {t.name}: its rule belongs to mk/targets.mk (catalog)")

    def test_readme_table_is_generated(self):
        with open(os.path.join(ROOT, "docs", "reproducing.md")) as fh:
            self.assertIn(catalog.readme_table(), fh.read(),
                          "docs/reproducing.md's target table differs from catalog.readme_table(): "
                          "write `analysis/reproduce.py readme-section > docs/reproducing.md`")

    def test_smoke_and_index_follow_the_catalog(self):
        import repro_smoke
        self.assertEqual(list(repro_smoke.TARGETS), catalog.ORDER)
        self.assertEqual(report.TARGET_ORDER, catalog.ORDER)
        self.assertEqual(report.TARGET_SPECS, {t.name: list(t.specs) for t in catalog.TARGETS})

    def test_out_of_reach_claims_are_listed_and_counted(self):
        import tempfile
        for o in catalog.OUT_OF_REACH:
            self.assertTrue(o.source and o.claim and len(o.why) > 20 and o.proxy, o)
        with tempfile.TemporaryDirectory() as d:
            text = open(report.write_index(d)).read()
        self.assertIn("## Claims no target reproduces (NOT TESTED)", text)
        for o in catalog.OUT_OF_REACH:
            self.assertIn(o.source, text)
        # with no report in the directory, the only claims counted are these, all NOT TESTED
        row = next(ln for ln in text.splitlines() if ln.startswith("| 0 |") or ln.startswith("| ") and "| total" not in ln
                   and ln.count("|") == len(st.VERDICTS) + 2 and ln.replace("|", "").replace(" ", "").isdigit())
        cells = [int(x) for x in row.strip("| ").split("|")]
        self.assertEqual(cells[st.VERDICTS.index(st.NOT_TESTED)], len(catalog.OUT_OF_REACH))
        self.assertEqual(cells[-1], len(catalog.OUT_OF_REACH))

    def test_every_target_is_complete(self):
        # both R7/R8 variants (catalog.LPP_PLATEAU switches between them) and R13 must be complete
        for t in tuple(catalog.TARGETS) + catalog._LPP_PLATEAU + catalog._LPP_TABLE9 + catalog._LPP_4EP:
            with self.subTest(t.name):
                for s in t.specs:
                    self.assertTrue(os.path.exists(catalog.spec_path(s)), s)
                self.assertTrue(t.bench or t.specs)
                self.assertTrue(callable(t.report_fn()))
                items = [p[0] for p in t.protocol]
                self.assertGreaterEqual(len(items), 3)
                self.assertIn("seeds" if not t.bench else "metric", items)
                self.assertTrue(t.data and t.runtime and t.headline)
                for r in t.rules:
                    self.assertIn(r.verdict, (st.NOT_TESTED, st.BY_CONSTRUCTION))
                    self.assertTrue(r.why)

    def test_each_spec_has_one_folder(self):
        # spec_path is the one owner of "where is spec X": a name in two folders would make it
        # depend on the search order, and a spec left at experiments/ itself belongs to no paper
        import json
        seen = {}
        for d in catalog.SPEC_DIRS:
            for path in glob.glob(os.path.join(catalog.ROOT, d, "*.json")):
                name = os.path.splitext(os.path.basename(path))[0]
                self.assertNotIn(name, seen, f"{name} is in {seen.get(name)} and {d}")
                seen[name] = d
                with open(path) as fh:
                    self.assertEqual(json.load(fh)["name"], name, path)
        self.assertEqual(glob.glob(os.path.join(catalog.ROOT, "experiments", "*.json")), [])
        for t in tuple(catalog.TARGETS) + catalog._LPP_PLATEAU + catalog._LPP_TABLE9 + catalog._LPP_4EP:
            paper = "experiments/" + t.name.split("-")[0]
            for s in t.specs:
                with self.subTest(t.name, spec=s):
                    self.assertEqual(os.path.relpath(os.path.dirname(catalog.spec_path(s)), catalog.ROOT), paper)

    def test_generated_specs_are_ignored_not_committed(self):
        # made by make from their script (mk/targets.mk's rule), never a committed copy that could drift
        import subprocess
        paths = [os.path.relpath(catalog.spec_path(s), catalog.ROOT) for g in catalog.GENERATED for s in g.specs]
        tracked = subprocess.run(["git", "-C", catalog.ROOT, "ls-files", "--", *paths],
                                 capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual(tracked, [], "generated specs are committed")
        ignored = subprocess.run(["git", "-C", catalog.ROOT, "check-ignore", "--no-index", *paths],
                                 capture_output=True, text=True).stdout.split()
        self.assertEqual(sorted(ignored), sorted(paths), ".gitignore must list every generated spec")
        for g in catalog.GENERATED:
            self.assertTrue(os.path.isfile(os.path.join(catalog.ROOT, g.script)), g.script)
            self.assertIn(g.out, catalog.SPEC_DIRS)

    #: phrases of a sweep's history: an issue number, what a target did "before" or "one
    #: seed" ago, what it "now" does
    HISTORY = (r"(?i)\bissue \d+|\bbefore issue|\bused to\b|\bwas \d+ epochs|\bone[- ]seed\b|\bat one seed\b"
               r"|\bpreviously\b|\bpast (sweep|run)s?\b|\bold (spec|run|sweep)s?\b"
               r"|\b(now|no longer) (trains|runs|uses|searches)\b")
    #: a runtime quoted in a spec goes stale with the machine: "~12 min", "9.0 min on 2
    #: cores", "144 runs / 9.0 min", "took 40 s"; the measured runtime lives in the report
    TIMING = (r"~\s?\d+(\.\d+)?\s?(s|sec|seconds|min|minutes|h|hours)\b|\d+(\.\d+)?\s?(min|minutes|hours)\b"
              r"|\b(about|near|around|roughly) \d+(\.\d+)?\s?(s|sec|seconds)\b"
              r"|\d+(\.\d+)?\s?(s|sec|seconds|min|minutes|h|hours) (on|with) \d+ cores?\b"
              r"|\b(took|takes|measured|measured at|runtime:?) ~?\d+(\.\d+)?\s?(s|sec|seconds|min|minutes|h|hours)\b"
              r"|\d+ runs\s?/\s?~?\d+(\.\d+)?\s?(s|min)\b")

    def test_history_patterns_catch_history(self):
        for bad in ("10 epochs at one seed before issue %d" % 20, "kept at the one-seed report's budget",
                    "it now trains 1 epoch", "144 runs / 9.0 min", "~12 min on 2 cores",
                    "9.0 min on 2 cores", "took 40 s", "(measured 21.3 min)", "~7 min",
                    "one lr to keep 108 runs near 7 min", "About 7 min with mpirun -n 2",
                    "about 12-21 min on an idle 2-core machine", "about 40 s"):
            with self.subTest(bad):
                self.assertRegex(bad, self.HISTORY + "|" + self.TIMING)
        for good in ("seeds 1-30", "4 epochs per run (paper: 300)", "warmup over 1/60 of the budget",
                     "0.3 ms per-batch latency", "30 mega-batches each", "Measured runtime in reports/x.md",
                     "one sample per worker per step", "5 runs", "sqrt(2) steps"):
            with self.subTest(good):
                self.assertNotRegex(good, self.HISTORY + "|" + self.TIMING)

    def test_spec_descriptions_state_protocol_not_history(self):
        import json
        catalog.ensure_specs([s for g in catalog.GENERATED for s in g.specs])
        for d in catalog.SPEC_DIRS:
            if d == "tests/golden/specs":
                continue  # frozen: tests/golden/*.json embed these specs whole (analysis/regress.py)
            for path in sorted(glob.glob(os.path.join(catalog.ROOT, d, "*.json"))):
                with open(path) as fh:
                    desc = json.load(fh).get("description", "")
                with self.subTest(os.path.relpath(path, catalog.ROOT)):
                    self.assertNotRegex(desc, self.HISTORY + "|" + self.TIMING,
                                        "a spec description states the protocol and its sources, not history "
                                        "or a runtime (the measured runtime is in the report)")

    #: specs whose descriptions still carry their protocol's detail (R2, R11, R12): each leaves this set
    #: when its detail moves into its target's protocol table
    LONG_DESCRIPTIONS: set = set()

    def test_spec_descriptions_are_one_line(self):
        # what a spec runs and its source, <= 200 characters; the protocol's detail is in the target's
        # protocol table (the report prints it), stated once
        import json
        catalog.ensure_specs([s for g in catalog.GENERATED for s in g.specs])
        for d in catalog.SPEC_DIRS:
            if d == "tests/golden/specs":
                continue  # frozen: tests/golden/*.json embed these specs whole (analysis/regress.py)
            for path in sorted(glob.glob(os.path.join(catalog.ROOT, d, "*.json"))):
                name = os.path.splitext(os.path.basename(path))[0]
                with open(path) as fh:
                    desc = json.load(fh).get("description", "")
                with self.subTest(name):
                    self.assertTrue(desc, "a spec says what it runs")
                    short = "\n" not in desc and len(desc) <= 200
                    self.assertEqual(short, name not in self.LONG_DESCRIPTIONS,
                                     f"{len(desc)} characters" if not short else "shortened: drop it from the set")

    def test_report_bodies_state_protocol_not_history(self):
        # CHANGES.md is the history, by design; README.md's runtime column is the catalog's
        import glob
        for path in sorted(glob.glob(os.path.join(catalog.ROOT, "reports", "*.md"))):
            if os.path.basename(path) in ("CHANGES.md", "README.md"):
                continue
            with open(path) as fh:
                text = fh.read()
            with self.subTest(os.path.basename(path)):
                self.assertNotRegex(text, self.HISTORY, "a report states its protocol, not the target's history")


class Engine(unittest.TestCase):
    """The engine's verdict classes: each check run where it must fire and where it must not."""

    def test_rule_takes_the_claim_out_of_the_datas_hands(self):
        t = catalog.get("lpp-frequency")
        v, note = report.classify(t, "No time advantage beyond a saturation U (Table 3)", "HOLDS")
        self.assertTrue(v.startswith(st.BY_CONSTRUCTION), v)
        self.assertIn("max((L + b) / U, b)", v)   # the formula's prediction is shown
        v, _ = report.classify(t, "Table 4: time robust to K (T - T(K=1) within 5%)", "HOLDS")
        self.assertTrue(v.startswith(st.BY_CONSTRUCTION), v)
        self.assertEqual(note, "the data alone: HOLDS")
        v, _ = report.classify(t, "Robust to K (Table 4)", "INCONCLUSIVE")
        self.assertEqual(v, st.INCONCLUSIVE)      # no rule: the data's verdict

    def test_zero_width_interval_is_flagged(self):
        t = catalog.get("adasum-toy")
        v, _ = report.classify(t, "some claim", "HOLDS", "ratio 1.50 [1.50, 1.50]")
        self.assertTrue(v.startswith(st.INCONCLUSIVE) and "constant" in v, v)
        v, _ = report.classify(t, "some claim", "HOLDS", "ratio -15.1% [-15.1%, -15.1%]")
        self.assertTrue(v.startswith(st.INCONCLUSIVE), v)
        v, _ = report.classify(t, "some claim", "HOLDS", "ratio 1.50 [1.20, 1.80]")
        self.assertEqual(v, st.HOLDS)
        # one constant component (an arm at chance in every seed) beside a varying difference
        v, _ = report.classify(t, "some claim", "DOES NOT HOLD", "Adasum 10.0 [10.0, 10.0]%, difference -67.7 [-71.7, -63.7] pp")
        self.assertEqual(v, st.FAILS)
        v, _ = report.classify(t, "some claim", "DOES NOT HOLD", "gap +4.0 [+3.1, +4.9]")
        self.assertEqual(v, st.FAILS)

    def test_not_tested_deviation(self):
        # A target of its own, so that the test does not depend on which deviations the
        # shipped targets still have.
        t = dataclasses.replace(catalog.get("adasum-seq-error"), rules=(catalog.Rule(
            "close to zero", st.NOT_TESTED, "6 logged points in the first 60 steps"),))
        v, note = report.classify(t, "Adasum's error comes close to zero at some steps", "DOES NOT HOLD")
        self.assertTrue(v.startswith(st.NOT_TESTED), v)
        self.assertIn("DOES NOT HOLD", note)


if __name__ == "__main__":
    unittest.main(verbosity=2)
