#!/usr/bin/python3
"""The statistics of R3 (orthogonality) and R6 (optimizers) on made-up series whose answer is
known: the LR boundaries a schedule's curve shows, the before-minus-after drop at a boundary,
the whole-run slope, the steps to a target accuracy and the validation choice among LRs.
Run: /usr/bin/python3 -m unittest tests/analysis/test_r3r6.py -v
"""
import math
import os
import sys
import unittest

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import adasum_optimizers as optimizers  # noqa: E402
from psgd_analysis import adasum_orthogonality as orthogonality  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402

HOLDS, FAILS, INCONCLUSIVE = st.HOLDS, st.FAILS, st.INCONCLUSIVE


class R3(unittest.TestCase):
    def test_boundaries_are_the_steps_whose_lr_changes(self):
        steps = np.arange(1, 21)
        lr = np.where(steps < 8, 0.1, np.where(steps < 15, 0.01, 0.001))
        self.assertEqual(orthogonality._lr_boundaries(pd.DataFrame({"step": steps, "lr": lr})), [8, 15])

    def test_no_boundary_in_a_constant_schedule(self):
        cur = pd.DataFrame({"step": np.arange(1, 11), "lr": np.full(10, 0.05)})
        self.assertEqual(orthogonality._lr_boundaries(cur), [])

    def test_drop_is_before_minus_after_the_first_step_with_the_new_lr(self):
        # curve label b (1-based) is loop step b - 1, the first update with the new LR; the metric
        # is recorded at 0-based loop steps, so its step b is the first gradient at weights the new
        # LR moved: it belongs to "after"
        steps = np.arange(0, 40, dtype=float)
        v = np.where(steps < 20, 0.8, 0.3)
        self.assertAlmostEqual(orthogonality._window_drop(steps, v, 20, 5), 0.5)
        self.assertAlmostEqual(orthogonality._window_drop(steps, v, 21, 5), 0.4)  # one late: step 20 counted before
        self.assertAlmostEqual(orthogonality._window_drop(steps, v, 10, 5), 0.0)
        self.assertTrue(orthogonality._window_drop(steps, -v, 20, 5) < 0)  # a rise is a negative drop

    def test_boundaries_with_a_factor_skip_the_warm_up(self):
        # the ResNet arm's schedule: a linear warm-up changes the LR at every step; only the x0.1
        # steps are the recipe's boundaries (arXiv 3.6)
        steps = np.arange(1, 41)
        lr = np.where(steps <= 10, 0.01 * steps, np.where(steps < 25, 0.1, np.where(steps < 33, 0.01, 0.001)))
        cur = pd.DataFrame({"step": steps, "lr": lr})
        self.assertEqual(orthogonality._lr_boundaries(cur, 0.1), [25, 33])
        self.assertEqual(len(orthogonality._lr_boundaries(cur)), 11)  # without: every warm-up step too

    def test_controls_lie_half_way_and_a_window_from_the_start(self):
        self.assertEqual(orthogonality._control_steps([100, 200, 260], 300, 10), [50, 150, 230])
        self.assertEqual(orthogonality._control_steps([16, 40], 60, 10), [28])  # 8 is within a window of 0
        self.assertEqual(orthogonality._control_steps([], 60, 10), [])

    def test_drops_that_controls_show_too_are_not_at_the_boundaries(self):
        drops = [[0.10, 0.12, 0.11, 0.13, 0.12], [0.05, 0.06, 0.07, 0.05, 0.06]]
        flat = [[0.01, -0.01, 0.0, 0.02, -0.02]]
        falling = [[0.04, 0.05, 0.06, 0.05, 0.04]]
        self.assertEqual(orthogonality._drops_verdict(drops, flat)[0], HOLDS)
        v, why = orthogonality._drops_verdict(drops, falling)
        self.assertEqual(st.verdict_class(v), INCONCLUSIVE)
        self.assertIn("the data alone: HOLDS", v)
        self.assertIn("1 of 1 controls", why)
        # a rise across a boundary stays DOES NOT HOLD when the controls drop or stay flat, and
        # becomes INCONCLUSIVE when a control rises too (the rise is then not shown to be at it)
        rise = [[-0.2, -0.25, -0.22, -0.21, -0.24]]
        self.assertEqual(orthogonality._drops_verdict(rise, falling)[0], FAILS)
        self.assertEqual(orthogonality._drops_verdict(rise, flat)[0], FAILS)
        rising = [[-0.04, -0.05, -0.06, -0.05, -0.04]]
        v, why = orthogonality._drops_verdict(rise, rising)
        self.assertEqual(st.verdict_class(v), INCONCLUSIVE)
        self.assertIn("the data alone: DOES NOT HOLD", v)
        self.assertIn("rise as well", why)

    def test_slope_is_per_unit_of_progress(self):
        x = np.linspace(0, 1, 50)
        self.assertAlmostEqual(orthogonality._slope(x, 0.2 + 0.5 * x), 0.5)
        self.assertTrue(math.isnan(orthogonality._slope(x[:2], x[:2])))


class R6(unittest.TestCase):
    def test_steps_to_target_is_the_first_evaluated_step_at_or_above_it(self):
        cur = pd.DataFrame({"step": [4, 8, 12, 16, 20],
                            "test_accuracy": [0.5, np.nan, 0.79, 0.81, 0.78]})
        self.assertEqual(optimizers._r6_steps_to(cur, 0.80), 16.0)
        self.assertEqual(optimizers._r6_steps_to(cur, 0.79), 12.0)
        self.assertTrue(math.isnan(optimizers._r6_steps_to(cur, 0.9)))

    def test_choice_prefers_non_diverged_seeds_then_mean_then_smaller(self):
        vals = {0.1: {1: 0.9, 2: 0.9},            # one seed diverged: fewer values
                0.03: {1: 0.8, 2: 0.8, 3: 0.8},
                0.01: {1: 0.7, 2: 0.9, 3: 0.8}}   # same mean as 0.03: the smaller wins
        self.assertEqual(optimizers._r6_choose(vals), 0.01)
        self.assertTrue(math.isnan(optimizers._r6_choose({0.1: {}})))

    def test_scaling_rule_is_linear_for_momentum_sgd(self):
        self.assertEqual(optimizers.R6_RULE["sgd"][1], 1.0)    # linear (Goyal et al.)

    def test_interior_needs_a_searched_value_on_either_side(self):
        self.assertTrue(optimizers._r6_interior(0.5, [0.25, 0.5, 1.0]))
        self.assertFalse(optimizers._r6_interior(0.25, [0.25, 0.5, 1.0]))
        self.assertFalse(optimizers._r6_interior(1.0, [0.25, 0.5, 1.0]))
        self.assertFalse(optimizers._r6_interior(0.5, [0.5, 1.0]))

    @staticmethod
    def _cells(curve, lrs=(0.025, 0.05, 0.1), noise=0.002):
        """Stage-1 validation accuracies: curve[E] at the best LR (0.05), 1 point lower elsewhere,
        three seeds spread by +-noise; the doubling of each E at 0.05 only beyond the grid."""
        cells = {}
        for e, acc in curve.items():
            for lr in (lrs if e != max(curve) else (0.05,)):
                a = acc - (0.0 if lr == 0.05 else 0.01)
                cells[e, lr] = {1: a - noise, 2: a, 3: a + noise}
        return cells

    def test_budget_is_the_first_epoch_count_whose_doubling_gains_less_than_the_seed_spread(self):
        # gains 3, 1.5, 0.2 points against a spread of 0.4: E* = 8 (8 -> 16 gains 0.2)
        b = optimizers.r6_budget(self._cells({2: 0.80, 4: 0.83, 8: 0.845, 16: 0.847}))
        self.assertTrue(b["converged"])
        self.assertEqual((b["E"], b["lr"]), (8, 0.05))
        self.assertTrue(b["lr interior"])
        self.assertEqual([r["passes"] for r in b["rows"]], [False, False, True, False])

    def test_budget_gain_below_one_point_passes_whatever_the_spread(self):
        # 2 -> 4 gains 3 points, 4 -> 8 gains 0.8 (spread 0.4): E* = 4 by the 1-point floor
        b = optimizers.r6_budget(self._cells({2: 0.80, 4: 0.83, 8: 0.838, 16: 0.84}))
        self.assertEqual(b["E"], 4)

    def test_budget_that_never_converges_is_flagged(self):
        # every doubling gains 2 points, more than the spread: the largest doubled E, not converged
        b = optimizers.r6_budget(self._cells({2: 0.80, 4: 0.82, 8: 0.84, 16: 0.86}))
        self.assertFalse(b["converged"])
        self.assertEqual(b["E"], 8)

    def test_budget_without_a_whole_lr_grid_is_flagged_not_missing(self):
        # one LR per epoch count (a grid cut short): no E can pass, the largest E run is read, flagged
        b = optimizers.r6_budget({(2, 0.025): {1: 0.79}, (4, 0.05): {1: 0.82}, (16, 0.05): {1: 0.85}})
        self.assertFalse(b["converged"])
        self.assertEqual((b["E"], b["lr"]), (16, 0.05))

    def test_budget_with_noisy_seeds_passes_early(self):
        # a seed spread of 4 points swallows a 3-point gain: E* = 2
        b = optimizers.r6_budget(self._cells({2: 0.80, 4: 0.83, 8: 0.845, 16: 0.847}, noise=0.02))
        self.assertEqual(b["E"], 2)


if __name__ == "__main__":
    unittest.main()
