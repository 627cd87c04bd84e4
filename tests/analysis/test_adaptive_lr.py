#!/usr/bin/python3
"""R9's learning-rate rule (psgd_analysis/adaptive_rules.py lr_rule: Adaptive SGD paper 5.1, "the value that
achieves the best accuracy across all the algorithms"), on made-up selection runs where a wrong rule
(the 1-worker choice, a mean instead of a max, a diverged run skipped instead of counted as 0) would
choose otherwise.
Run: /usr/bin/python3 -m unittest tests/analysis/test_adaptive_lr.py -v
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import adaptive_rules, adaptive_runs  # noqa: E402


def run(W, arm, lr, seed, val, status="completed"):
    return {"workers": W, "arm": arm, "lr": lr, "seed": seed, "best_val": val, "status": status}


class LrRule(unittest.TestCase):
    def test_literal_reading_takes_the_best_cell(self):
        # lr 1: Adaptive collapses (0.2) but gradient aggregation peaks highest (0.62);
        # lr 0.1: every arm good (0.55-0.58), the best mean but not the best cell
        rows = []
        for s in (101, 102):
            rows += [run(2, "Adaptive", 1.0, s, 0.20), run(2, "Grad. aggregation", 1.0, s, 0.62),
                     run(2, "Adaptive", 0.1, s, 0.58), run(2, "Grad. aggregation", 0.1, s, 0.55)]
        table, chosen, chosen_mean = adaptive_rules.lr_rule(rows)
        self.assertEqual(chosen, 1.0)
        self.assertEqual(chosen_mean, 0.1)
        self.assertAlmostEqual(table[(2, "Adaptive")][0.1], 0.58)

    def test_diverged_counts_as_zero_and_ties_take_the_smaller_lr(self):
        rows = [run(4, "Elastic", 10.0, 101, 0.9), run(4, "Elastic", 10.0, 102, float("nan"), "diverged"),
                run(4, "Elastic", 1.0, 101, 0.5), run(4, "Elastic", 1.0, 102, 0.5),
                run(4, "Elastic", 0.1, 101, 0.5), run(4, "Elastic", 0.1, 102, 0.5)]
        table, chosen, _ = adaptive_rules.lr_rule(rows)
        self.assertAlmostEqual(table[(4, "Elastic")][10.0], 0.45)  # (0.9 + 0) / 2, not 0.9
        self.assertEqual(chosen, 0.1)                               # 0.5 at 0.1 and 1: the smaller

    def test_empty(self):
        self.assertEqual(adaptive_rules.lr_rule([])[1:], (None, None))


class Scaling(unittest.TestCase):
    """Fig. 8 (adaptive_rules.scaling): mega-batches to 99% of the lowest best P@1 over 1, 2, 4 workers."""

    @staticmethod
    def cell(reach_by_W, top_by_W):
        """Per worker count, per seed: P@1 jumps to top (+ a seed-dependent bit, so that paired
        differences are not constant) at mega-batch reach (of 20), 0.1 before."""
        import numpy as np
        out = {}
        for W, reach in reach_by_W.items():
            arm = adaptive_runs.MINIBATCH if W == 1 else "Adaptive"
            mb = np.arange(1, 21, dtype=float)
            out[(W, arm)] = [{"seed": s, "run": {"curves": {"step": mb, "sim_s": mb, "test_accuracy":
                                                            np.where(mb >= r, top_by_W[W] + 0.01 * s * W, 0.1)}}}
                             for s, r in enumerate(reach, start=1)]
        return out

    def test_more_workers_faster_holds(self):
        c = self.cell({1: [12, 14, 11], 2: [6, 8, 7], 4: [2, 3, 3]}, {1: 0.50, 2: 0.55, 4: 0.60})
        md, claims = adaptive_rules.scaling(c, [1, 2, 4], 20)
        self.assertEqual([v for _, _, v in claims], ["HOLDS", "HOLDS"])
        self.assertIn("| 4 |", "\n".join(md))

    def test_fewer_workers_better_does_not_hold(self):
        c = self.cell({1: [2, 3, 3], 2: [6, 8, 7], 4: [12, 14, 11]}, {1: 0.70, 2: 0.60, 4: 0.45})
        _, claims = adaptive_rules.scaling(c, [1, 2, 4], 20)
        self.assertEqual([v for _, _, v in claims], ["DOES NOT HOLD", "DOES NOT HOLD"])

    def test_a_zero_width_difference_is_not_decided(self):
        # every seed 4 mega-batches apart: an interval of width 0 measures nothing
        c = self.cell({1: [12, 14, 11], 2: [8, 10, 7], 4: [2, 3, 3]}, {1: 0.50, 2: 0.55, 4: 0.60})
        _, claims = adaptive_rules.scaling(c, [1, 2, 4], 20)
        self.assertEqual(claims[0][2], "INCONCLUSIVE")

    def test_needs_three_worker_counts(self):
        self.assertEqual(adaptive_rules.scaling(self.cell({2: [3, 4], 4: [1, 2]}, {2: 0.5, 4: 0.6}), [2, 4], 20), ([], []))


if __name__ == "__main__":
    unittest.main()
