#!/usr/bin/python3
"""R14's rules (psgd_analysis/diloco.py: paired_diffs, lower_claim, every_cell, mild_claim,
within_claim, shrink_claim, bytes_ratio) on made-up numbers where each must pass and where it
must fail, and its catalog rules against the claims they are meant to take.
Run: /usr/bin/python3 -m unittest tests/analysis/test_diloco.py -v
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import catalog, report  # noqa: E402
from psgd_analysis import diloco as dl  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402

INF = math.inf


class Rules(unittest.TestCase):
    def test_paired_diffs(self):
        # the arm claimed higher minus the arm claimed lower, per common seed
        self.assertEqual(dl.paired_diffs({1: 1.0, 2: 1.1, 3: 1.2}, {1: 1.5, 2: 1.3, 4: 9.0}),
                         [0.5, 0.19999999999999996])
        # a diverged 'higher' arm is +inf (the claim's way), a diverged 'lower' arm -inf, both: dropped
        self.assertEqual(dl.paired_diffs({1: 1.0, 2: INF, 3: INF}, {1: INF, 2: 1.0, 3: INF}), [INF, -INF])

    def test_lower_claim(self):
        # a clear, consistent gap: HOLDS; the same gap the other way: DOES NOT HOLD
        self.assertEqual(dl.lower_claim([0.03, 0.035, 0.028])[0], st.HOLDS)
        self.assertEqual(dl.lower_claim([-0.03, -0.035, -0.028])[0], st.FAILS)
        # noise around 0: INCONCLUSIVE
        self.assertEqual(dl.lower_claim([0.01, -0.012, 0.004])[0], st.INCONCLUSIVE)
        # one seed is not a mean's interval
        self.assertEqual(dl.lower_claim([0.05])[0], st.INCONCLUSIVE)
        # the same difference in every seed measures nothing
        v, _, text = dl.lower_claim([0.02, 0.02, 0.02])
        self.assertEqual(v, st.INCONCLUSIVE)
        self.assertIn("constant", text)
        # a diverged arm: the exact sign test, which 3 seeds cannot pass, 6 agreeing seeds can
        self.assertEqual(dl.lower_claim([INF, 0.03, 0.02])[0], st.INCONCLUSIVE)
        self.assertEqual(dl.lower_claim([INF, 0.03, 0.02, 0.01, 0.02, 0.05])[0], st.HOLDS)
        self.assertEqual(dl.lower_claim([-INF, -0.03, -0.02, -0.01, -0.02, -0.05])[0], st.FAILS)
        # the p-value against the claim is small when the data go against it
        self.assertLess(dl.lower_claim([-0.03, -0.035, -0.028])[1], 0.01)

    def test_every_cell(self):
        good = {"a": [0.03, 0.035, 0.028], "b": [0.02, 0.025, 0.022]}
        self.assertEqual(dl.every_cell(good)[0], st.HOLDS)
        # one cell open: not every cell holds, and nothing is rejected
        self.assertEqual(dl.every_cell(dict(good, c=[0.01, -0.012, 0.004]))[0], st.INCONCLUSIVE)
        # one cell clearly the other way survives Holm over 3 cells
        self.assertEqual(dl.every_cell(dict(good, c=[-0.05, -0.051, -0.049]))[0], st.FAILS)
        # a cell that is only mildly against the claim (p ~ 0.03) does not survive Holm over 3
        mild = dict(good, c=[-0.02, -0.005, -0.035])
        self.assertGreater(dl.lower_claim(mild["c"])[1], 0.05 / 3)
        self.assertEqual(dl.every_cell(mild)[0], st.INCONCLUSIVE)
        self.assertEqual(dl.every_cell({})[0], st.INCONCLUSIVE)

    def test_mild_claim(self):
        # +1% in per-character perplexity, tight: below the paper's 2.9%
        d = [math.log(1.010), math.log(1.011), math.log(1.009)]
        self.assertEqual(dl.mild_claim(d)[0], st.HOLDS)
        # +6%: above it
        d = [math.log(1.06), math.log(1.065), math.log(1.058)]
        self.assertEqual(dl.mild_claim(d)[0], st.FAILS)
        # straddling 2.9%
        d = [math.log(1.02), math.log(1.04), math.log(1.03)]
        self.assertEqual(dl.mild_claim(d)[0], st.INCONCLUSIVE)

    def test_within_claim(self):
        # within +-1%, tight: equivalent
        self.assertEqual(dl.within_claim([0.001, -0.002, 0.0005])[0], st.HOLDS)
        # +3%, tight: not equivalent
        self.assertEqual(dl.within_claim([0.03, 0.031, 0.029])[0], st.FAILS)
        # centred at 0 but too noisy to show it is within 1%
        self.assertEqual(dl.within_claim([0.02, -0.02, 0.001])[0], st.INCONCLUSIVE)
        # the 90% interval (TOST) decides equivalence: inside at 90%, reaching the margin at 95%
        d = [0.004, 0.006, 0.007, 0.003, 0.005]
        _, lo90, hi90, _ = st.t_interval([math.expm1(x) for x in d], 0.90)
        self.assertTrue(hi90 < 0.01)
        self.assertEqual(dl.within_claim(d)[0], st.HOLDS)

    def test_shrink_claim(self):
        early = {1: 0.08, 2: 0.07, 3: 0.09}
        self.assertEqual(dl.shrink_claim(early, {1: 0.01, 2: 0.012, 3: 0.009})[0], st.HOLDS)
        self.assertEqual(dl.shrink_claim({1: 0.01, 2: 0.012, 3: 0.009}, early)[0], st.FAILS)

    def test_bytes_ratio(self):
        self.assertEqual(dl.bytes_ratio({1: 5000.0, 2: 5000.0}, {1: 100.0, 2: 0.0}), [50.0])


class CatalogRules(unittest.TestCase):
    """The catalog's rules take exactly the claims they name (a rule that matched nothing, or a
    decided claim, would go unnoticed)."""

    def setUp(self):
        self.t = catalog.get("diloco-lm")

    def verdict(self, claim):
        return st.verdict_class(report.classify(self.t, claim, st.HOLDS)[0])

    def test_scale_and_construction_rules(self):
        self.assertEqual(self.verdict(dl.C_DP.format(H=50)), st.NOT_TESTED)
        self.assertEqual(self.verdict(dl.C_BYTES), st.BY_CONSTRUCTION)
        self.assertEqual(self.verdict(dl.C_ADAM), st.NOT_TESTED)
        self.assertEqual(self.verdict(dl.C_H_MILD.format(r=8, lo=25, hi=200)), st.NOT_TESTED)
        self.assertEqual(self.verdict(dl.C_IID_END), st.NOT_TESTED)
        # the validation split (the book's last stretch, beside the last worker's shard) can decide
        # every i.i.d. / non-i.i.d. comparison
        self.assertEqual(self.verdict(dl.C_IID_EARLY.format(f=25)), st.NOT_TESTED)
        self.assertEqual(self.verdict(dl.C_IID_SHRINK.format(f=25)), st.NOT_TESTED)

    def test_decided_claims_stay_with_the_data(self):
        for c in (dl.C_8X, dl.C_BASE.format(H=50), dl.C_H_END.format(lo=25, hi=200),
                  dl.C_H_EVERY.format(hs="25, 50, 100, 200"), dl.C_SGD, dl.C_REPL.format(ws="1, 2, 4, 8")):
            with self.subTest(c):
                self.assertEqual(self.verdict(c), st.HOLDS)


if __name__ == "__main__":
    unittest.main(verbosity=2)
