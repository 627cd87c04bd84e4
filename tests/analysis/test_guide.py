#!/usr/bin/python3
"""R12's rules (psgd_analysis/guide.py: choose_lr, better_everywhere) on made-up numbers where
each must pass and where it must fail.
Run: /usr/bin/python3 -m unittest tests/analysis/test_guide.py -v
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import guide  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402


class Rules(unittest.TestCase):
    def test_choose_lr(self):
        self.assertEqual(guide.choose_lr({0.01: [0.80, 0.81], 0.02: [0.86, 0.84], 0.04: [0.0, 0.9]}), 0.02)
        self.assertEqual(guide.choose_lr({0.02: [0.8], 0.01: [0.8]}), 0.01)
        self.assertTrue(math.isnan(guide.choose_lr({})))

    def test_better_everywhere(self):
        up = [0.02, 0.03, 0.025, 0.035, 0.02, 0.03]
        self.assertEqual(guide.better_everywhere({2: up, 4: [x + 0.01 for x in up]}), st.HOLDS)
        # one W clearly worse: Holm rejects that cell
        self.assertEqual(guide.better_everywhere({2: up, 4: [-x for x in up]}), st.FAILS)
        # one W undecided: neither
        self.assertEqual(guide.better_everywhere({2: up, 4: [0.01, -0.01, 0.02, -0.02, 0.0, 0.005]}),
                         st.INCONCLUSIVE)
        # a constant difference measures nothing
        self.assertEqual(guide.better_everywhere({2: [0.01] * 4}), st.INCONCLUSIVE)

    def test_base_lr_read_back_from_each_rule(self):
        # averaging runs at base x W, Adasum at base x 2.5: both read back to the same base
        for base in (0.01, 0.04, 0.16):
            for W in (2, 4, 8, 16):
                self.assertAlmostEqual(guide.base_lr(guide.AVG, base * W, W), base)
                self.assertAlmostEqual(guide.base_lr(guide.ADA, base * 2.5, W), base)
        # a wrong rule (Adasum read as x W) would put Adasum at W = 4, lr 0.1 on base 0.025
        self.assertNotAlmostEqual(guide.base_lr(guide.ADA, 0.1, 4), 0.025)

    def test_budget_in_words(self):
        import pandas as pd
        one = pd.DataFrame({"workers": [2, 4], "steps": [400, 400], "config": [{}, {}]})
        self.assertEqual(guide.budget(one), "400 steps at every W")
        # a budget in epochs: W workers take 60,000 / (64 W) steps an epoch, so each W its own count
        ep = pd.DataFrame({"workers": [2, 2, 16], "steps": [4688, 4688, 586],
                           "config": [{"epochs": 10}, {"epochs": 10}, {"epochs": 10}]})
        self.assertEqual(guide.budget(ep), "10 epochs at every W (W = 2: 4688 steps, W = 16: 586 steps)")
        # a run that diverged at step 20 is not the budget
        dv = ep.assign(status=["completed", "completed", "completed"])
        dv = pd.concat([dv, pd.DataFrame({"workers": [16], "steps": [20], "config": [{"epochs": 10}],
                                          "status": ["diverged"]})])
        self.assertEqual(guide.budget(dv), "10 epochs at every W (W = 2: 4688 steps, W = 16: 586 steps)")


class Budgets(unittest.TestCase):
    def test_accuracy_at_an_evaluation(self):
        import pandas as pd
        c = pd.DataFrame({"step": [10, 20, 20, 30], "test_accuracy": [0.5, float("nan"), 0.7, 0.8]})
        self.assertEqual(guide.accuracy_at(c, 20, "completed"), 0.7)  # the logged row with an evaluation
        self.assertTrue(math.isnan(guide.accuracy_at(c, 25, "completed")))  # never evaluated there
        # a run that diverged before that evaluation ends with 0% there, as the final table scores it
        self.assertEqual(guide.accuracy_at(c, 40, "diverged"), 0.0)
        self.assertEqual(guide.accuracy_at(pd.DataFrame({"step": [1]}), 40, "diverged"), 0.0)

    def test_epochs_of(self):
        import pandas as pd
        self.assertEqual(guide.epochs_of(pd.DataFrame({"config": [{"epochs": 10}, {"epochs": 10.0}]})), "after 10 epochs")
        self.assertEqual(guide.epochs_of(pd.DataFrame({"config": [{"epochs": 10}, {"epochs": 5}]})), "")


if __name__ == "__main__":
    unittest.main()
