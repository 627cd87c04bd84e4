#!/usr/bin/python3
"""Known-answer tests of psgd_analysis.stats (the verdict rule of every report).

Each expected value is computed by hand or from a textbook table, not by the code under
test: a wrong interval or decision rule fails here before any report uses it.
Run: /usr/bin/python3 -m unittest tests/analysis/test_stats.py -v
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import stats as st  # noqa: E402


class Intervals(unittest.TestCase):
    def test_student_t_known(self):
        # s = 1, t_0.975,2 = 4.302653 -> half width 4.302653 / sqrt(3) = 2.484138
        m, lo, hi, n = st.t_interval([1.0, 2.0, 3.0])
        self.assertEqual(n, 3)
        self.assertAlmostEqual(m, 2.0)
        self.assertAlmostEqual(hi - m, 2.484138, places=5)
        self.assertAlmostEqual(m - lo, 2.484138, places=5)

    def test_t_clipped_to_bounds(self):
        # the review's R1 case: bimodal accuracies 0.1 / 0.1 / 0.9 at n = 3 gave [-0.42, 1.52]
        m, lo, hi, _ = st.t_interval([0.1, 0.1, 0.9], bounds=(0.0, 1.0))
        self.assertAlmostEqual(m, 1.1 / 3)
        self.assertEqual((lo, hi), (0.0, 1.0))
        m, lo, hi, _ = st.mean_interval([0.1, 0.1, 0.9], bounds=(0.0, 1.0))
        self.assertTrue(0.0 <= lo <= m <= hi <= 1.0)

    def test_percentile_bootstrap_n3_is_min_max(self):
        # P(all three resamples = the minimum) = 1/27 > 2.5%: the 2.5% quantile IS the minimum
        _, lo, hi, _ = st.bootstrap_interval([1.0, 2.0, 4.0], method="percentile")
        self.assertEqual((lo, hi), (1.0, 4.0))

    def test_bca_matches_normal_theory_on_large_normal_sample(self):
        import numpy as np
        x = np.random.default_rng(7).normal(10.0, 2.0, 400)
        m, tlo, thi, _ = st.t_interval(x)
        _, blo, bhi, _ = st.bootstrap_interval(x, method="bca")
        self.assertLess(abs(blo - tlo), 0.05 * (thi - tlo))
        self.assertLess(abs(bhi - thi), 0.05 * (thi - tlo))
        # and mean_interval switches to the bootstrap from N_BOOT seeds on
        self.assertEqual(st.mean_interval(x)[1:3], (blo, bhi))

    def test_bca_respects_bounds_and_is_deterministic(self):
        x = [0.99, 1.0, 1.0, 0.97, 1.0, 0.98, 1.0, 1.0, 0.96, 1.0, 0.995]
        a = st.mean_interval(x, bounds=(0.0, 1.0))
        self.assertLessEqual(a[2], 1.0)
        self.assertEqual(a, st.mean_interval(x, bounds=(0.0, 1.0)))

    def test_constant_is_flagged_and_not_decided(self):
        self.assertTrue(st.is_constant([0.5, 0.5, 0.5]))
        self.assertFalse(st.is_constant([0.5, 0.5, 0.51]))
        self.assertFalse(st.is_constant([0.5]))
        v, ci = st.decide_mean([2.0, 2.0, 2.0], 1.0, "above")
        self.assertEqual(v, st.INCONCLUSIVE)
        self.assertEqual(ci[1], ci[2])


class Rates(unittest.TestCase):
    def test_wilson_known(self):
        # Wilson 95%: 0/10 -> [0, 0.2775]; 5/10 -> [0.2366, 0.7634] (Newcombe 1998, Table I style)
        p, lo, hi = st.wilson(0, 10)
        self.assertEqual((p, lo), (0.0, 0.0))
        self.assertAlmostEqual(hi, 0.2775, places=4)
        _, lo, hi = st.wilson(5, 10)
        self.assertAlmostEqual(lo, 0.2366, places=4)
        self.assertAlmostEqual(hi, 0.7634, places=4)

    def test_clopper_pearson_known(self):
        # exact: 0/10 -> upper 1 - 0.025^(1/10) = 0.30850; 10/10 -> lower 0.025^(1/10) = 0.69150;
        # 5/10 -> [0.18709, 0.81291]
        _, lo, hi = st.clopper_pearson(0, 10)
        self.assertEqual(lo, 0.0)
        self.assertAlmostEqual(hi, 1 - 0.025 ** 0.1, places=6)
        _, lo, hi = st.clopper_pearson(10, 10)
        self.assertAlmostEqual(lo, 0.025 ** 0.1, places=6)
        self.assertEqual(hi, 1.0)
        _, lo, hi = st.clopper_pearson(5, 10)
        self.assertAlmostEqual(lo, 0.18709, places=4)
        self.assertAlmostEqual(hi, 0.81291, places=4)

    def test_divergence_rule(self):
        (k, n), kept = st.split_diverged([0.8, None, 0.7, 0.1], ["completed", "diverged", "completed", "diverged"])
        self.assertEqual((k, n), (2, 4))
        self.assertEqual(kept, [0.8, 0.7])  # a diverged run's value is never an accuracy
        self.assertEqual(st.fmt_rate(0, 3), "0/3 (0% [0, 71])")


class ExactTests(unittest.TestCase):
    def test_binom_less_known(self):
        # P(X <= k), X ~ Bin(n, 1/2): 1/2^8 for 0 of 8; sum_{i<=7} C(30, i) / 2^30 for 7 of 30
        self.assertAlmostEqual(st.binom_less(0, 8), 1 / 256)
        self.assertAlmostEqual(st.binom_less(7, 30), 2804012 / 2 ** 30)
        self.assertAlmostEqual(st.binom_less(30, 30), 1.0)

    def test_sign_test_known(self):
        self.assertAlmostEqual(st.sign_test(6, 6), 2 / 64)
        self.assertAlmostEqual(st.sign_test(3, 3), 0.25)
        self.assertAlmostEqual(st.sign_test(5, 10), 1.0)

    def test_min_seeds_for_an_exact_verdict(self):
        self.assertEqual(st.min_n_exact(0.05), 6)
        self.assertEqual(st.decide_exact(3, 3), st.INCONCLUSIVE)  # 3 identical choices decide nothing
        self.assertEqual(st.decide_exact(6, 6), st.HOLDS)
        self.assertEqual(st.decide_exact(0, 6), st.FAILS)
        self.assertEqual(st.decide_exact(8, 10), st.INCONCLUSIVE)  # p = 0.109
        self.assertEqual(st.decide_exact(9, 10), st.HOLDS)         # p = 0.0215

    def test_combine_exact_parts(self):
        # every part 6 of 6: each sign test p = 0.03125 < 0.05
        self.assertEqual(st.combine_exact([(6, 6), (6, 6)]), st.HOLDS)
        # one part 5 of 6 (p = 0.22): not every part holds, and nothing is against the claim
        self.assertEqual(st.combine_exact([(6, 6), (5, 6)]), st.INCONCLUSIVE)
        # one part 0 of 6: one-sided p 1/64 = 0.0156, Holm's first threshold 0.05 / 3 = 0.0167
        self.assertEqual(st.combine_exact([(6, 6), (6, 6), (0, 6)]), st.FAILS)
        # ... but not among 4 parts (0.05 / 4 = 0.0125)
        self.assertEqual(st.combine_exact([(6, 6), (6, 6), (6, 6), (0, 6)]), st.INCONCLUSIVE)
        self.assertEqual(st.combine_exact([]), st.INCONCLUSIVE)

    def test_fisher_known(self):
        # Fisher's tea-tasting table: two-sided p = 34/70 = 0.4857
        self.assertAlmostEqual(st.fisher_exact([[3, 1], [1, 3]]), 34 / 70, places=6)
        self.assertAlmostEqual(st.fisher_exact([[8, 2], [1, 5]]), 0.03497, places=4)

    def test_holm_known(self):
        # sorted 0.005*4 = 0.02 < .05 reject; 0.01*3 = 0.03 reject; 0.03*2 = 0.06 stop
        self.assertEqual(st.holm([0.01, 0.04, 0.03, 0.005]), [True, False, False, True])
        self.assertEqual(st.holm([0.04, 0.04]), [False, False])  # Bonferroni-like first step
        self.assertEqual(st.holm([float("nan"), 0.001]), [False, True])

    def test_t_pvalues_known(self):
        # [1, 2, 3] vs 0: t = 2 / (1/sqrt 3) = 3.4641, df 2 -> one-sided p = 0.03709
        pa, pb = st.t_pvalues([1.0, 2.0, 3.0], 0.0)
        self.assertAlmostEqual(pa, 0.03709, places=4)
        self.assertAlmostEqual(pa + pb, 1.0)


class Verdicts(unittest.TestCase):
    def test_decide(self):
        self.assertEqual(st.decide(-1.0, -0.5, 0.0, "below"), st.HOLDS)
        self.assertEqual(st.decide(0.1, 0.5, 0.0, "below"), st.FAILS)
        self.assertEqual(st.decide(-0.1, 0.5, 0.0, "below"), st.INCONCLUSIVE)
        self.assertEqual(st.decide(0.2, 0.4, 0.1, "above"), st.HOLDS)
        self.assertEqual(st.decide(math.nan, math.nan), st.INCONCLUSIVE)

    def test_classes(self):
        self.assertEqual(st.verdict_class("NOT TESTED (deviation: 4 of 300 epochs)"), st.NOT_TESTED)
        self.assertEqual(st.verdict_class("**BY CONSTRUCTION**"), st.BY_CONSTRUCTION)
        self.assertEqual(st.verdict_class("does not hold"), st.FAILS)
        self.assertEqual(st.verdict_class("holds"), st.HOLDS)
        self.assertEqual(st.verdict_class("partly holds"), st.INCONCLUSIVE)
        self.assertEqual(len(st.VERDICTS), 5)

    def test_many_cells_holm_rule(self):
        hold = [[2.0, 2.2, 1.9], [1.5, 1.7, 1.6], [3.0, 2.8, 3.1]]
        self.assertEqual(st.combine_cells(hold, 0.0, "above"), st.HOLDS)
        # one noisy cell among several that hold: neither all hold nor Holm rejects -> INCONCLUSIVE
        self.assertEqual(st.combine_cells(hold + [[0.5, -0.6, 0.2]], 0.0, "above"), st.INCONCLUSIVE)
        # a cell clearly against the claim: Holm rejects it -> DOES NOT HOLD
        self.assertEqual(st.combine_cells(hold + [[-5.0, -5.1, -4.9]], 0.0, "above"), st.FAILS)
        # 16 cells each marginally against (one-sided p = 0.0144 each): the any-cell rule reads
        # DOES NOT HOLD; Holm over 16 cells (0.0144 x 16 > 0.05) does not reject
        marg = [[-1.3, -1.0, -0.7]] * 16
        self.assertEqual(st.combine(st.decide_mean(c, 0.0, "above")[0] for c in marg), st.FAILS)
        self.assertEqual(st.combine_cells(marg, 0.0, "above"), st.INCONCLUSIVE)

    def test_parts_with_their_own_side_holm_rule(self):
        up, down = [2.0, 2.2, 1.9], [-2.0, -2.2, -1.9]
        # a time below 0 and an accuracy above 0: both on their side -> HOLDS
        self.assertEqual(st.combine_parts([(down, 0.0, "below", None), (up, 0.0, "above", None)]), st.HOLDS)
        # one part marginally against (one-sided p = 0.0144; its interval alone excludes 0): among 2 parts
        # Holm rejects it (0.0144 x 2 < 0.05) ...
        marg_up = [1.3, 1.0, 0.7]
        self.assertEqual(st.combine_parts([(marg_up, 0.0, "below", None), (up, 0.0, "above", None)]), st.FAILS)
        # ... among 4 it does not (0.0144 x 4 > 0.05), where the any-part rule reads DOES NOT HOLD
        four = [(marg_up, 0.0, "below", None)] + [(up, 0.0, "above", None)] * 3
        self.assertEqual(st.combine(st.decide_mean(v, t, b)[0] for v, t, b, _ in four), st.FAILS)
        self.assertEqual(st.combine_parts(four), st.INCONCLUSIVE)
        # 'within +-tol': inside -> HOLDS; clearly beyond either side -> DOES NOT HOLD
        self.assertEqual(st.combine_parts([([0.001, -0.002, 0.0005, 0.0015], 0.01, "within", (-1, 1))]), st.HOLDS)
        self.assertEqual(st.combine_parts([([0.03, 0.031, 0.029], 0.01, "within", (-1, 1))]), st.FAILS)
        self.assertEqual(st.combine_parts([([-0.03, -0.031, -0.029], 0.01, "within", (-1, 1))]), st.FAILS)
        self.assertEqual(st.combine_parts([([0.012, -0.001, 0.02], 0.01, "within", (-1, 1))]), st.INCONCLUSIVE)
        # a part constant across seeds decides nothing, on either side
        self.assertEqual(st.combine_parts([([5.0, 5.0, 5.0], 0.0, "below", None)]), st.INCONCLUSIVE)
        self.assertEqual(st.combine_parts([([-5.0, -5.0, -5.0], 0.0, "below", None)]), st.INCONCLUSIVE)
        # one threshold and side for every part: the combine_cells rule
        hold = [[2.0, 2.2, 1.9], [1.5, 1.7, 1.6], [3.0, 2.8, 3.1]]
        for cells in (hold, hold + [[0.5, -0.6, 0.2]], hold + [[-5.0, -5.1, -4.9]], [[-1.3, -1.0, -0.7]] * 16):
            self.assertEqual(st.combine_parts([(c, 0.0, "above", None) for c in cells]),
                             st.combine_cells(cells, 0.0, "above"))
        self.assertEqual(st.combine_parts([]), st.INCONCLUSIVE)
        with self.assertRaises(ValueError):
            st.combine_parts([(up, 0.0, "sideways", None)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
