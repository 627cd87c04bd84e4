#!/usr/bin/python3
"""The one table of reproduction targets (analysis/psgd_analysis/catalog.py) against what is
generated or checked from it: mk/targets.mk, the README table, repro-smoke's targets, the
report index order, the specs on disk, and that no other make fragment defines a target's rule.
Run: /usr/bin/python3 -m unittest tests/analysis/test_catalog.py -v
"""
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
        with open(os.path.join(ROOT, "README.md")) as fh:
            self.assertIn(catalog.readme_table(), fh.read(),
                          "README.md's target table differs from catalog.readme_table(): "
                          "paste `analysis/reproduce.py readme-section`")

    def test_smoke_and_index_follow_the_catalog(self):
        import repro_smoke
        self.assertEqual(list(repro_smoke.TARGETS), catalog.ORDER)
        self.assertEqual(report.TARGET_ORDER, catalog.ORDER)
        self.assertEqual(report.TARGET_SPECS, {t.name: list(t.specs) for t in catalog.TARGETS})

    def test_every_target_is_complete(self):
        for t in catalog.TARGETS:
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

    def test_spec_descriptions_state_protocol_not_history(self):
        import json
        for t in catalog.TARGETS:
            for s in t.specs:
                with open(catalog.spec_path(s)) as fh:
                    d = json.load(fh).get("description", "")
                with self.subTest(s):
                    self.assertNotRegex(d, r"(?i)\bissue \d+|\bbefore issue|\bused to\b|\bwas \d+ epochs",
                                        "a spec description states the protocol and its sources, not history")


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
        t = catalog.get("adasum-seq-error")
        v, note = report.classify(t, "Adasum's error comes close to zero at some steps", "DOES NOT HOLD")
        self.assertTrue(v.startswith(st.NOT_TESTED), v)
        self.assertIn("DOES NOT HOLD", note)


if __name__ == "__main__":
    unittest.main(verbosity=2)
