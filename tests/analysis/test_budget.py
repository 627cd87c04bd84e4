#!/usr/bin/python3
"""R1 stage 0's rule (psgd_analysis/budget.py: the shortest budget whose sequential run reliably
reaches the low end of the net's maximum accuracy range) on made-up numbers where each step must
pass and where it must fail.
Run: /usr/bin/python3 -m unittest tests/analysis/test_budget.py -v
"""
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import budget  # noqa: E402


class Rules(unittest.TestCase):
    CEIL = {0.05: [0.900, 0.905, 0.902], 0.1: [0.910, 0.906, 0.913], 0.2: [0.0, 0.914, 0.915]}

    def test_ceiling_is_the_best_lr_seeds_range(self):
        # 0.2 has the two highest seeds but a diverged one (0): the seed mean picks 0.1
        self.assertEqual(budget.ceiling(self.CEIL), (0.1, 0.906, 0.913))
        self.assertTrue(math.isnan(budget.ceiling({})[0]))

    def test_reaches_needs_every_seed_at_the_best_lr(self):
        self.assertEqual(budget.reaches({0.1: [0.91, 0.907, 0.906]}, 0.906), (0.1, True))
        self.assertEqual(budget.reaches({0.1: [0.92, 0.92, 0.905]}, 0.906), (0.1, False))
        # another lr where every seed reaches it does not count: the budget's best lr decides
        self.assertEqual(budget.reaches({0.1: [0.93, 0.93, 0.90], 0.05: [0.907, 0.907, 0.907]}, 0.906),
                         (0.1, False))

    def test_shortest_reliable_budget(self):
        by_e = {2: {0.1: [0.85, 0.86, 0.85]}, 4: {0.1: [0.90, 0.91, 0.905]},
                8: {0.05: [0.908, 0.907, 0.909], 0.1: [0.90, 0.90, 0.90]}, 16: {0.1: [0.91, 0.91, 0.91]}}
        e, lr, table = budget.choose_budget(by_e, self.CEIL)
        self.assertEqual((e, lr), (8.0, 0.05))
        self.assertEqual(table[4.0], (0.1, False))
        self.assertEqual(table[16.0], (0.1, True))

    def test_none_reliable_falls_back_to_the_ceiling(self):
        by_e = {2: {0.1: [0.85, 0.86, 0.85]}, 16: {0.1: [0.91, 0.91, 0.90]}}
        self.assertEqual(budget.choose_budget(by_e, self.CEIL)[:2], (budget.CEILING_EPOCHS, 0.1))
        self.assertEqual(budget.choose_budget(by_e, self.CEIL, 64)[:2], (64.0, 0.1))


if __name__ == "__main__":
    unittest.main()
