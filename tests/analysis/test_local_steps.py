#!/usr/bin/python3
"""R11's rules (psgd_analysis/local_steps.py: choose_lr, epochs_to, ratio_claims, long_claims,
sim_s_per_epoch, time_reason) on made-up numbers where each must pass and where it must fail.
Run: /usr/bin/python3 -m unittest tests/analysis/test_local_steps.py -v
"""
import math
import os
import sys
import unittest

import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import local_steps as ls  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402


class Rules(unittest.TestCase):
    def test_choose_lr(self):
        self.assertEqual(ls.choose_lr({0.01: [0.80, 0.82], 0.02: [0.85, 0.84], 0.04: [0.0, 0.86]}), 0.02)
        self.assertEqual(ls.choose_lr({0.01: [0.8], 0.02: [0.8]}), 0.01)   # ties: the smaller
        self.assertTrue(math.isnan(ls.choose_lr({})))

    def test_epochs_to(self):
        c = pd.DataFrame({"epoch": [0.25, 0.5, 0.75, 1.0], "test_accuracy": [0.5, float("nan"), 0.8, 0.9]})
        self.assertEqual(ls.epochs_to(c, 0.8), 0.75)
        self.assertTrue(math.isnan(ls.epochs_to(c, 0.95)))

    def test_ratio_claims(self):
        # the paper's shape: ~1.2x the epochs
        v = ls.ratio_claims([3.0, 3.25, 2.75, 3.0], [3.5, 4.0, 3.25, 3.75], 8)
        self.assertEqual((v["more"][0], v["at_most"][0]), (st.HOLDS, st.HOLDS))
        # 16 local steps never reach the target in 8 epochs: the ratios are lower bounds 8 / e1 ~ 2.7, above
        # both thresholds: more HOLDS, at most FAILS
        v = ls.ratio_claims([3.0, 3.25, 2.75], [float("nan")] * 3, 8)
        self.assertEqual((v["more"][0], v["at_most"][0], v["censored"]), (st.HOLDS, st.FAILS, 3))
        # never reached, but the lower bounds 8 / e1 ~ 1.35 are below 1.5: a lower bound cannot show
        # "at most 1.5x" either way (a censoring constant used to decide it), while "more" still HOLDS
        v = ls.ratio_claims([5.8, 6.1, 5.6, 6.0], [float("nan")] * 4, 8)
        self.assertEqual((v["more"][0], v["at_most"][0]), (st.HOLDS, st.INCONCLUSIVE))
        # one seed censored among ratios clearly below 1: "more" must not become DOES NOT HOLD on a bound
        v = ls.ratio_claims([4.0, 4.5, 4.25, 4.0], [2.0, 2.5, 2.25, float("nan")], 4)
        self.assertEqual(v["more"][0], st.INCONCLUSIVE)
        # the 1-step arm never reaching the target gives no bound at all
        v = ls.ratio_claims([3.0, float("nan")], [4.0, 5.0], 8)
        self.assertEqual((v["more"][0], v["at_most"][0]), (st.INCONCLUSIVE, st.INCONCLUSIVE))
        # fewer epochs with local steps: 'more' fails
        v = ls.ratio_claims([4.0, 4.5, 4.25], [2.0, 2.5, 2.25], 8)
        self.assertEqual(v["more"][0], st.FAILS)
        # the same ratio every seed measures nothing
        self.assertEqual(ls.ratio_claims([2.0, 4.0], [3.0, 6.0], 8)["more"][0], st.INCONCLUSIVE)

    def test_long_claims(self):
        nan = float("nan")
        # 6 of 6: the 16-step run never reaches the target (a finished run below it, not a bound)
        e1, t1 = [40, 46, 49, 51, 43, 43], [10, 12, 13, 13, 11, 11]
        c = ls.long_claims(e1, [nan] * 6, t1, [nan] * 6)
        self.assertEqual(c["more"], (st.HOLDS, 6, 6))
        self.assertEqual(c["at_most"], (st.FAILS, 0, 6))
        self.assertEqual(c["time"], (st.FAILS, 0, 6))
        # the paper's shape: 1.24x the epochs, less time at 0.767 of the per-epoch time
        eK = [1.24 * a for a in e1]
        c = ls.long_claims(e1, eK, t1, [0.767 * 1.24 * t for t in t1])
        self.assertEqual(c["more"][0], st.HOLDS)
        self.assertEqual(c["at_most"][0], st.HOLDS)
        self.assertEqual(c["time"][0], st.HOLDS)
        # 5 of 6 is not enough for the exact test at 6 seeds
        c = ls.long_claims(e1, [nan] * 5 + [1.2 * 43], t1, [nan] * 5 + [10])
        self.assertEqual(c["at_most"], (st.INCONCLUSIVE, 1, 6))
        # a seed whose 1-step run never reaches the target is dropped
        c = ls.long_claims([nan] + e1[1:], [nan] * 6, [nan] + t1[1:], [nan] * 6)
        self.assertEqual(c["more"], (st.INCONCLUSIVE, 5, 5))

    def test_sim_s_per_epoch(self):
        # the clock's closed form: S steps per epoch x (compute + one Adasum per K steps); a 16-step run's
        # last round passes the budget (20 rounds = 1.024 epochs), so the curve's epoch divides, not the budget
        c, a = 0.6228e-3, 0.20556e-3

        def run(K, rounds, per_epoch):
            steps = list(range(1, rounds + 1))
            return {"curve": pd.DataFrame({"step": steps, "epoch": [s / per_epoch for s in steps],
                                           "sim_s": [s * (K * c + a) for s in steps]})}
        t1 = ls.sim_s_per_epoch([run(1, 313, 312.5)])
        t16 = ls.sim_s_per_epoch([run(16, 20, 19.53125)])
        self.assertAlmostEqual(t1, 312.5 * (c + a), places=12)
        self.assertAlmostEqual(t16, 312.5 * (c + a / 16), places=12)
        self.assertAlmostEqual(t16 / t1, 1.98 / 2.58, places=3)  # the share the clock was solved for
        self.assertTrue(math.isnan(ls.sim_s_per_epoch([])))

    def test_time_reason_states_the_runs_numbers(self):
        why = ls.time_reason(0.2589, 0.1986, 16, (2.58, 1.98))
        for part in ("0.2589 s with 1 local step", "0.1986 s with 16 local steps", "ratio 0.767",
                     "fewer than 1.30x the epochs", "1.98 / 2.58 = 0.767"):
            self.assertIn(part, why)
        # equal per-epoch times (a free collective): the tie is at the same epochs, 1.00x
        self.assertIn("fewer than 1.00x the epochs", ls.time_reason(1.5684, 1.5684, 16))


if __name__ == "__main__":
    unittest.main()
