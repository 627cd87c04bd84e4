#!/usr/bin/python3
"""Every claim's decision, run on synthetic per-seed numbers where it must HOLD and where it
must NOT (DESIGN.md section 11): a test that cannot fail is caught here. The numbers are made
up to sit clearly on one side; the functions are the ones the reports call
(psgd_analysis/claims.py, the LPP 'within' rule, the engine's NOT TESTED / BY CONSTRUCTION rules).
Run: /usr/bin/python3 -m unittest tests/analysis/test_claims.py -v
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import catalog, claims, report  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402
from psgd_analysis.lpp import within  # noqa: E402
from psgd_analysis import streaming as sm  # noqa: E402

HOLDS, FAILS = st.HOLDS, st.FAILS


class R1(unittest.TestCase):
    def test_untuned_must_hold(self):
        v, _ = claims.r1_untuned({16: [30.0, 32.0, 35.0], 32: [50.0, 55.0, 60.0]},
                                 {16: [0.1, -0.2, 0.3], 32: [0.2, 0.0, 0.4]})
        self.assertEqual(v, HOLDS)

    def test_untuned_must_not(self):
        # Adasum also loses 8-12 points at W = 32: the 'near' half is rejected
        v, _ = claims.r1_untuned({16: [30.0, 32.0, 35.0], 32: [50.0, 55.0, 60.0]},
                                 {16: [0.1, -0.2, 0.3], 32: [8.0, 10.0, 12.0]})
        self.assertEqual(v, FAILS)

    def test_untuned_near_counts_every_adasum_cell(self):
        # losses against the sequential run: Adasum near at W = 16 and 32 but 3 points off at W = 4
        v, _ = claims.r1_untuned({16: [30.0, 32.0, 35.0], 32: [50.0, 55.0, 60.0]},
                                 {4: [3.0, 3.2, 2.9], 16: [0.1, -0.2, 0.3], 32: [0.2, 0.0, 0.4]})
        self.assertEqual(v, FAILS)

    def test_converges_must_hold_and_must_not(self):
        # the paper's words: Sum fails (> 5 pp), Adasum still converges (< 5 pp, not 'near')
        sum_loss = {16: [30.0, 32.0, 35.0], 32: [50.0, 55.0, 60.0]}
        self.assertEqual(claims.r1_converges(sum_loss, {16: [1.5, 2.0, 2.2], 32: [3.0, 3.4, 3.1]})[0], HOLDS)
        self.assertEqual(claims.r1_converges(sum_loss, {16: [1.5, 2.0, 2.2], 32: [20.0, 22.0, 25.0]})[0], FAILS)
        self.assertEqual(claims.r1_converges({16: [1.0, 1.2, 0.8], 32: [50.0, 55.0, 60.0]},
                                             {16: [1.5, 2.0, 2.2], 32: [3.0, 3.4, 3.1]})[0], FAILS)

    def test_diverged_runs_decide_by_the_exact_sign_test(self):
        inf = float("inf")
        ada = {16: [0.1, -0.2, 0.3, 0.0, 0.2, 0.1], 32: [0.2, 0.0, 0.4, 0.1, 0.3, 0.2]}
        # every Sum run at W = 16 and 32 diverged (loss +inf): 6 of 6 collapse, p = 0.031
        v, ev = claims.r1_untuned({16: [inf] * 6, 32: [inf] * 5 + [40.0]}, ada)
        self.assertEqual(v, HOLDS, ev)
        # 3 seeds cannot reach 95% however they come out
        v, ev = claims.r1_untuned({16: [inf] * 3, 32: [inf] * 3}, {16: ada[16][:3], 32: ada[32][:3]})
        self.assertEqual(v, st.INCONCLUSIVE, ev)
        # Adasum diverging is the opposite of 'near'
        v, ev = claims.r1_untuned({16: [inf] * 6, 32: [inf] * 6}, {16: ada[16], 32: [inf] * 6})
        self.assertEqual(v, FAILS, ev)
        # ordering: Sum diverged and Adasum did not (+inf) in every seed
        self.assertEqual(claims.r1_ordering({16: [inf] * 6, 32: [inf] * 6})[0], HOLDS)
        self.assertEqual(claims.r1_ordering({16: [-inf] * 6, 32: [inf] * 6})[0], FAILS)

    def test_ordering_must_hold_and_must_not(self):
        self.assertEqual(claims.r1_ordering({16: [5.0, 6.0, 7.0], 32: [20.0, 22.0, 25.0]})[0], HOLDS)
        self.assertEqual(claims.r1_ordering({16: [-5.0, -6.0, -7.0], 32: [20.0, 22.0, 25.0]})[0], FAILS)

    def test_tuned_lrs_must_hold(self):
        # 6 seeds, each part (Sum 4 vs 32, Adasum vs Sum at 16, at 32) all the claimed way
        v, ev = claims.r1_tuned_lrs([0.0328] * 6, [0.0041] * 6, {16: [0.1312] * 6, 32: [0.1312] * 6},
                                    {16: [0.0164] * 6, 32: [0.0082] * 6})
        self.assertEqual(v, HOLDS, ev)

    def test_tuned_lrs_must_not(self):
        v, ev = claims.r1_tuned_lrs([0.0041] * 6, [0.0328] * 6, {16: [0.0041] * 6, 32: [0.0041] * 6},
                                    {16: [0.0164] * 6, 32: [0.0082] * 6})
        self.assertEqual(v, FAILS, ev)

    def test_tuned_lrs_parts_are_not_pooled(self):
        # 5 seeds: 15 pairs all the claimed way would pass one pooled sign test (p = 6e-5), but each
        # part's 5 of 5 (p = 0.0625) cannot: the review's W = 16 case
        v, ev = claims.r1_tuned_lrs([0.0328] * 5, [0.0041] * 5, {16: [0.1312] * 5, 32: [0.1312] * 5},
                                    {16: [0.0164] * 5, 32: [0.0082] * 5})
        self.assertEqual(v, st.INCONCLUSIVE, ev)
        self.assertIn("cannot reach 95%", ev)
        # one part decided against the claim (6 of 6 the other way) decides it, Holm over 3 parts
        v, ev = claims.r1_tuned_lrs([0.0328] * 6, [0.0041] * 6, {16: [0.0041] * 6, 32: [0.1312] * 6},
                                    {16: [0.0164] * 6, 32: [0.0082] * 6})
        self.assertEqual(v, FAILS, ev)

    def test_tuned_lrs_three_identical_choices_decide_nothing(self):
        # the review's case: 3 seeds that pick the same LR are not 'decisive' (zero-width interval)
        v, ev = claims.higher_choice([(0.1312, 0.0328)] * 3)
        self.assertEqual(v, st.INCONCLUSIVE)
        self.assertIn("needs >= 6", ev)


class BodyMarks(unittest.TestCase):
    """report._mark_body: a claim's class replaces the body's verdict on that claim's lines only."""
    WIDE = ("Adasum at the single-worker best LR x 2.5 ends with a higher test accuracy than averaging at LR x W, "
            "the same number of steps, at every W")
    SCOPED = ("On Fashion-MNIST after 10 epochs, Adasum at the single-worker best LR x 2.5 ends with a higher test "
              "accuracy than averaging at LR x W, at every W")

    def test_a_claim_inside_another_does_not_mark_it(self):
        claims_ = [{"claim": self.WIDE, "verdict": "NOT TESTED (the budget)", "note": "the data alone: DOES NOT HOLD"},
                   {"claim": self.SCOPED, "verdict": "DOES NOT HOLD"}]
        body = [f"| {self.WIDE} | -1.26 | **DOES NOT HOLD** |", f"| {self.SCOPED} | -1.26 | **DOES NOT HOLD** |",
                f"- **DOES NOT HOLD**: {self.SCOPED}"]
        out = report._mark_body(body, claims_)
        self.assertIn("**NOT TESTED** (the data alone: DOES NOT HOLD)", out[0])
        self.assertEqual(out[1:], body[1:])

    def test_a_shortened_claim_is_marked_only_when_one_claim_fits(self):
        claims_ = [{"claim": self.WIDE, "verdict": "NOT TESTED (x)", "note": "the data alone: HOLDS"}]
        out = report._mark_body([f"- {self.WIDE[:60]}...: **HOLDS**"], claims_)
        self.assertIn("**NOT TESTED** (the data alone: HOLDS)", out[0])
        two = claims_ + [{"claim": self.WIDE[:55] + " at W = 2", "verdict": "HOLDS"}]
        line = f"- {self.WIDE[:52]}...: **HOLDS**"
        self.assertEqual(report._mark_body([line], two), [line])


class Paired(unittest.TestCase):
    """R1 tuned accuracies, R2 (Adasum error minus sync's, negated), R3 rise, R6, R7 'keeps'
    (difference above -KEEP_PP), R9: a paired difference above a threshold."""

    def test_must_hold(self):
        self.assertEqual(claims.paired_above([1.2, 1.5, 0.9])[0], HOLDS)
        self.assertEqual(claims.paired_above([-0.2, -0.1, -0.3], -0.5)[0], HOLDS)  # R7 keep, KEEP_PP 0.5

    def test_must_not(self):
        self.assertEqual(claims.paired_above([-1.2, -1.5, -0.9])[0], FAILS)
        self.assertEqual(claims.paired_above([-1.2, -1.3, -1.1], -0.5)[0], FAILS)

    def test_constant_is_not_decided(self):
        # R7 'LPP fastest (simulated)': deterministic per seed, [-15.1%, -15.1%]
        v, ev = claims.paired_above([0.151, 0.151, 0.151])
        self.assertEqual(v, st.INCONCLUSIVE)
        self.assertIn("constant", ev)


class R2(unittest.TestCase):
    """The R2 rules (adasum_seq_error.seq_plateau_step and the three claims) on synthetic inputs."""

    def test_plateau_found_after_the_knee(self):
        import numpy as np
        from psgd_analysis.adasum_seq_error import seq_plateau_step
        rng = np.random.default_rng(7)
        steps = np.arange(0, 8001, 100)
        acc = np.minimum(0.80 + 0.10 * steps / 3000, 0.90) + rng.normal(0, 0.001, len(steps))
        T, (b, lo, hi) = seq_plateau_step(steps, acc, 2000)
        self.assertIsNotNone(T)
        # the following 2000 steps stop rising once the window starts near the knee (3000)
        self.assertGreaterEqual(T, 2500)
        self.assertLessEqual(T, 3500)
        self.assertLessEqual(lo, 0.0)

    def test_no_plateau_while_rising(self):
        import numpy as np
        from psgd_analysis.adasum_seq_error import seq_plateau_step
        rng = np.random.default_rng(8)
        steps = np.arange(0, 8001, 100)
        acc = 0.80 + 0.10 * steps / 8000 + rng.normal(0, 0.001, len(steps))
        T, (b, lo, hi) = seq_plateau_step(steps, acc, 2000)
        self.assertIsNone(T)
        self.assertGreater(lo, 0.0)

    def test_below_sync_must_hold_and_must_not(self):
        from psgd_analysis.adasum_seq_error import seq_below_sync
        self.assertEqual(seq_below_sync([-0.6, -0.5, -0.7], [-0.3, -0.35, -0.32]), HOLDS)
        # below the sum but above the average in every seed: Holm rejects the average cell
        self.assertEqual(seq_below_sync([-0.6, -0.5, -0.7], [0.30, 0.35, 0.32]), FAILS)

    def test_close_to_zero_must_hold_and_must_not(self):
        from psgd_analysis.adasum_seq_error import seq_close_to_zero
        self.assertEqual(seq_close_to_zero([-0.05, -0.08, -0.06])[0], HOLDS)
        # never nearer the emulation than sequential SGD itself (the 300-step runs: ~+0.1)
        self.assertEqual(seq_close_to_zero([0.10, 0.14, 0.12])[0], FAILS)

    def test_sync_decays_must_hold_and_must_not(self):
        from psgd_analysis.adasum_seq_error import seq_sync_decays
        self.assertEqual(seq_sync_decays([-0.5, -0.6, -0.55])[0], HOLDS)
        self.assertEqual(seq_sync_decays([0.3, 0.4, 0.35])[0], FAILS)


class R5(unittest.TestCase):
    def test_fewer_steps_must_hold(self):
        v, _ = claims.r5_fewer_steps({("quadratic", 2): [0.3, 0.35, 0.4], ("cubic", 2): [0.2, 0.25, 0.22]})
        self.assertEqual(v, HOLDS)

    def test_fewer_steps_must_not(self):
        v, _ = claims.r5_fewer_steps({("quadratic", 2): [0.3, 0.35, 0.4], ("cubic", 2): [-0.5, -0.55, -0.52]})
        self.assertEqual(v, FAILS)

    def test_lr_ratio_must_hold(self):
        # 12 cells x 30 seeds, most ratios 2 or 2.83 (inside 1.41-3.54), a few outside
        cells = {("m", x, w): [2.0, 2.83, 2.0, 1.0, 2.0] * 6 for x in (1, 2) for w in (4, 8, 16)}
        self.assertEqual(claims.r5_lr_ratio(cells)[0], HOLDS)

    def test_lr_ratio_must_not(self):
        # the review's numbers: ratios 0.71-1.41, mostly 1: every cell mostly outside
        cells = {("m", x, w): [0.71, 1.0, 1.41, 1.0, 0.71, 1.0] * 5 for x in (1, 2) for w in (4, 8, 16)}
        v, ev = claims.r5_lr_ratio(cells)
        self.assertEqual(v, FAILS, ev)
        self.assertIn("after Holm: 6 of 6", ev)

    def test_lr_ratio_grid_rounding_counts_as_on_the_edge(self):
        # 0.08 / 0.057 = 1.40 is one sqrt(2) grid step (1.414) written to 3 digits: inside
        self.assertEqual(claims.r5_lr_ratio({("m",): [0.08 / 0.057] * 30})[0], HOLDS)
        self.assertEqual(claims.r5_lr_ratio({("m",): [1.0] * 30})[0], FAILS)

    def test_lr_ratio_too_few_seeds_decide_nothing(self):
        # 3 seeds per cell cannot reach 5% in any cell, whichever way they point
        cells = {("m", w): [1.0, 1.0, 1.0] for w in (4, 8, 16)}
        self.assertEqual(claims.r5_lr_ratio(cells)[0], st.INCONCLUSIVE)


class ConstantAcrossArms(unittest.TestCase):
    """The engine's 'could it have come out otherwise' check across arms: a claim that
    compares arms whose statistic is the same in every arm is not decided, however the
    per-seed values spread."""

    T = catalog.get("adasum-toy")
    CLAIM = "At its best LR Adasum converges in fewer steps than Average (synthetic)"

    def test_fires_when_every_arm_gives_the_same_value(self):
        # Adasum silently falling back to averaging: both arms' steps identical, seed by seed
        steps = [33.0, 35.0, 31.0, 40.0]
        self.assertTrue(st.constant_across_arms({"Average": steps, "Adasum": list(steps)}))
        # an LR every arm chooses alike (a ratio of exactly 1, say), and 3 arms
        self.assertTrue(st.constant_across_arms({"W 4": [0.32] * 5, "W 8": [0.32] * 5, "W 1": [0.32] * 5}))
        rep = report.Report("adasum-toy", "t")
        rep.claim_verdict(self.CLAIM, HOLDS, "+0.10 [+0.05, +0.15]", arms={"Average": steps, "Adasum": steps})
        self.assertEqual(rep._claims[0].get("constant"), "arms")
        v, note = report.classify(self.T, self.CLAIM, HOLDS, "+0.10 [+0.05, +0.15]", rep._claims[0]["constant"])
        self.assertTrue(v.startswith(st.INCONCLUSIVE + " (statistic constant across arms"), v)
        self.assertIn("the data alone: HOLDS", note)
        v, _ = report.classify(self.T, self.CLAIM, FAILS, "-0.10 [-0.15, -0.05]", "arms")
        self.assertEqual(st.verdict_class(v), st.INCONCLUSIVE)

    def test_does_not_fire_when_the_arms_differ(self):
        # constant across seeds within each arm but different between arms: a real difference
        self.assertFalse(st.constant_across_arms({"Average": [30.0] * 5, "Adasum": [20.0] * 5}))
        self.assertFalse(st.constant_across_arms({"Average": [33.0, 35.0, 31.0], "Adasum": [21.0, 25.0, 19.0]}))
        # one arm, or an arm with nothing finite: nothing to compare, no flag
        self.assertFalse(st.constant_across_arms({"Adasum": [1.0, 1.0]}))
        self.assertFalse(st.constant_across_arms({"Average": [1.0], "Adasum": [float("nan")]}))
        rep = report.Report("adasum-toy", "t")
        rep.claim_verdict(self.CLAIM, HOLDS, "+0.3 [+0.2, +0.4]",
                          arms={"Average": [33.0, 35.0, 31.0], "Adasum": [21.0, 25.0, 19.0]})
        self.assertNotIn("constant", rep._claims[0])
        self.assertEqual(report.classify(self.T, self.CLAIM, HOLDS, "+0.3 [+0.2, +0.4]", None), (HOLDS, ""))

    def test_a_reports_own_not_tested_keeps_its_reason_and_the_data(self):
        # a protocol check inside the report (lpp.not_tested, adaptive_figures.figures): the engine keeps
        # the reason in the verdict and what the data said beside it, as for a catalog rule
        v, note = report.classify(self.T, "a claim no rule matches", "NOT TESTED (the LR was not the rule's; "
                                  "the data alone: DOES NOT HOLD)")
        self.assertEqual(v, "NOT TESTED (the LR was not the rule's)")
        self.assertEqual(note, "the data alone: DOES NOT HOLD")
        self.assertEqual(report.classify(self.T, "a claim no rule matches", "NOT TESTED (why)"), ("NOT TESTED (why)", ""))

    def test_flag_survives_the_engine(self):
        # the flag travels in the report's record, so finish() (and reclassify) keep it
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            rep = report.Report("adasum-toy", "t")
            steps = [33.0, 35.0, 31.0]
            rep.claim_verdict(self.CLAIM, HOLDS, "+0.10 [+0.05, +0.15]", arms={"Average": steps, "Adasum": steps})
            md = rep.write(d)["md"]
            for _ in range(2):  # idempotent
                rec = report.finish(md, "adasum-toy", [])
                self.assertEqual(st.verdict_class(rec["claims"][0]["verdict"]), st.INCONCLUSIVE)
                self.assertEqual(rec["claims"][0]["data_verdict"], HOLDS)


class LppWithin(unittest.TestCase):
    """R7/R8 'flat' / 'robust' claims: the difference's interval inside +-tol."""

    def test_must_hold(self):
        self.assertEqual(within(st.t_interval([0.001, -0.002, 0.0015]), 0.01), HOLDS)

    def test_must_not(self):
        self.assertEqual(within(st.t_interval([0.05, 0.055, 0.06]), 0.01), FAILS)


class R10Rate(unittest.TestCase):
    def test_must_hold_and_must_not(self):
        self.assertEqual(claims.rate_above(29, 30)[0], HOLDS)
        self.assertEqual(claims.rate_above(2, 30)[0], FAILS)
        self.assertEqual(claims.rate_above(3, 3)[0], st.INCONCLUSIVE)  # 3/3: CP lower 0.29


class R10Settling(unittest.TestCase):
    """Fig. 12a: the rank correlation of speed and batch size after the burn-in, and the
    spread of the updates, from per-mega-batch rows (adaptive_rules.settling)."""
    SPEED = [1.0, 0.76, 0.9, 0.82]

    def rows(self, settled):
        # 10 mega-batches: every batch at b_max first, then `settled` from the 3rd on
        batch = [[64, 64, 64, 64]] * 2 + [settled] * 8
        updates = [[30, 22, 27, 25]] + [[25, 25, 25, 25]] * 9
        return batch, updates

    def test_faster_workers_with_larger_batches_correlate(self):
        from psgd_analysis.adaptive_rules import settling
        rho, cv0, cv1 = settling(self.SPEED, *self.rows([64, 40, 56, 48]))
        self.assertGreater(rho, 0.7)  # the burn-in (first 2 rows, all equal) is left out
        self.assertLess(cv1, cv0)
        v, _ = st.decide_mean([rho, rho - 0.05, rho - 0.1], 0.0, "above", (-1.0, 1.0))
        self.assertEqual(v, HOLDS)

    def test_reversed_order_does_not(self):
        from psgd_analysis.adaptive_rules import settling
        rho, _, _ = settling(self.SPEED, *self.rows([40, 64, 48, 56]))
        self.assertLess(rho, -0.7)
        v, _ = st.decide_mean([rho, rho + 0.05, rho + 0.1], 0.0, "above", (-1.0, 1.0))
        self.assertEqual(v, FAILS)


class R10SettlingByTheClock(unittest.TestCase):
    """Fig. 12a's BY CONSTRUCTION rule: Algorithm 1's fixed point and loop gain on the clock
    (catalog.settling_fixed_point, settling_gain) and the clock-only simulation that checks them
    (adaptive_rules.settling_prediction)."""
    SPEED = [1.0, 0.76, 0.9, 0.82]
    L_OVER_C = 9.0

    def test_fixed_point_equalizes_the_batch_times(self):
        fp = catalog.settling_fixed_point(self.SPEED, 64, self.L_OVER_C)
        self.assertEqual(fp[0], 64)
        times = [(self.L_OVER_C + b) / s for b, s in zip(fp, self.SPEED)]
        for t in times:
            self.assertAlmostEqual(t, times[0])
        self.assertEqual(sorted(range(4), key=lambda i: fp[i]), sorted(range(4), key=lambda i: self.SPEED[i]))

    def test_gain_known_values(self):
        # beta 4, M 6,400, W 4, b 64, L/c 16: 4 x 6400 / (4 x 64 x 80) = 1.25
        self.assertAlmostEqual(catalog.settling_gain(4, 6400, 4, 64, 16.0), 1.25)
        self.assertAlmostEqual(catalog.settling_gain(8, 6400, 4, 64, 16.0), 2.5)
        self.assertAlmostEqual(catalog.settling_gain(4, 3200, 4, 64, 16.0), 0.625)

    def test_simulation_settles_below_gain_one_and_not_above_two(self):
        from psgd_analysis.adaptive_rules import settling_prediction

        def cost(n):
            return self.L_OVER_C + n  # L/c = 9 in units of c
        fp = catalog.settling_fixed_point(self.SPEED, 64, self.L_OVER_C)
        b = sum(fp) / 4
        low = [beta for beta in (1, 2) if catalog.settling_gain(beta, 6400, 4, b, self.L_OVER_C) < 1][-1]
        high = 8
        self.assertGreater(catalog.settling_gain(high, 6400, 4, b, self.L_OVER_C), 2)
        rho_low, dcv_low = settling_prediction(self.SPEED, cost, low, 6400, 64, 8, 64, 30, seeds=range(1, 5))
        rho_high, dcv_high = settling_prediction(self.SPEED, cost, high, 6400, 64, 8, 64, 30, seeds=range(1, 5))
        self.assertGreater(rho_low, 0.9)
        self.assertLess(dcv_low, 0)
        self.assertLess(rho_high, 0.5)
        self.assertGreater(dcv_high, dcv_low)

    def test_rule_text_quotes_the_formula(self):
        t = catalog._r10_settling_text()
        self.assertIn("beta M / (W b (b + L/c))", t)


class R10PertThr(unittest.TestCase):
    """Fig. 11a: an inert gate (statistic below every threshold swept) is BY CONSTRUCTION; a
    gate that crosses the thresholds is decided on the accuracy differences."""

    def test_inert_gate_is_by_construction(self):
        from psgd_analysis.adaptive_rules import pert_thr_claim
        v, ev = pert_thr_claim([8e-5, 9e-5, 1.1e-4], 0.05, [0.0, 0.0, 0.0], True)
        self.assertEqual(v, st.BY_CONSTRUCTION)
        self.assertIn("bit-identical", ev)

    def test_live_gate_is_decided_by_the_data(self):
        from psgd_analysis.adaptive_rules import pert_thr_claim
        v, _ = pert_thr_claim([0.02, 0.07, 0.12], 0.05, [0.001, -0.002, 0.0015], False)
        self.assertEqual(v, HOLDS)
        v, _ = pert_thr_claim([0.02, 0.07, 0.12], 0.05, [0.05, 0.055, 0.06], False)
        self.assertEqual(v, FAILS)


class EngineRules(unittest.TestCase):
    """Each catalog rule fires on the claim it is written for, and not on another target's claim."""

    CLAIMS = {  # a claim of each rule's target, as its report words it
        ("adasum-lenet", "Untuned: Sum's accuracy collapses"): "Untuned: Sum's accuracy collapses beyond 8 workers",
        ("adasum-seq-error", "close to zero"): "Adasum's error comes close to zero at some steps (arXiv 3.7)",
        ("adasum-seq-error", "goes down with the number of steps"): "Synchronous SGD's error (the sum) goes down "
                                                                    "with the number of steps, as the gradients' "
                                                                    "norm decays (arXiv 3.7)",
        ("adasum-orthogonality", "drops at the boundaries of the LR schedule (clear drops"): (
            "Orthogonality drops at the boundaries of the LR schedule (clear drops exactly at the LR changes, "
            "arXiv 3.6; MLSys 5.1.3)"),
        ("adasum-orthogonality", "falls across each of the schedule's x0.1 LR steps"): (
            "BatchNorm ResNet-8 with weight decay on the ResNet-50 recipe's schedule: orthogonality falls across "
            "each of the schedule's x0.1 LR steps ('clear drops in the orthogonality [...] exactly at boundaries of "
            "learning rate schedule change', arXiv 3.6; MLSys 5.1.3)"),
        ("adasum-lenet", "Untuned, weaker form"): (
            "Untuned, weaker form (the ordering of Fig. 6): beyond 8 workers Sum loses more accuracy than Adasum "
            "against the sequential run"),
        ("adasum-lenet", "Tuned: Adasum's best LRs"): (
            "Tuned: Adasum's best LRs stay high at 16 and 32 workers while Sum's fall (arXiv 5.4 LR table)"),
        ("adasum-lenet", "Tuned Sum stays below untuned Adasum"): (
            "Tuned Sum stays below untuned Adasum at 32 workers, and tuned Adasum beats tuned Sum at 16 (arXiv 5.4)"),
        ("adasum-lenet", "Ablation, where Adasum is applied"): (
            "Ablation, where Adasum is applied: on the optimizer deltas (Horovod's DistributedOptimizer, arXiv 4.1) "
            "Adasum reaches a higher accuracy than on the gradients at W = 16 and 32 (untuned LR)"),
        ("lpp-table9", "At the paper's alpha0 0.1, LARS does not stop"): (
            "Ablation: At the paper's alpha0 0.1, LARS does not stop MB-SGD and PL-SGD losing test accuracy at B_loc "
            "1024: Te.A.(MB+LARS, 0.1) - Te.A.(MB 128) < 0 and Te.A.(PL+LARS, 0.1) - Te.A.(PL 128) < 0"),
        ("lpp-table9", "Te.A.(MB/PL+LARS, alpha0 0.1) > 0"): (
            "Ablation: At the paper's alpha0 0.1, LAP-SGD and LPP-SGD (U 4, B_loc 256) generalize better than MB-SGD "
            "and PL-SGD with LARS at B_loc 1024: every Te.A.(LAP/LPP) - Te.A.(MB/PL+LARS, alpha0 0.1) > 0"),
        ("adasum-lenet", "Untuned, in the paper's words"): (
            "Untuned, in the paper's words: Sum fails to converge at more than 8 workers, while Adasum still "
            "converges at 16 and 32 (arXiv 5.4)"),
        ("adasum-optimizers", "Adam: Adasum scales Adam"): (
            "Adam: Adasum scales Adam to the large batch, where Adam with averaging does not converge (MLSys 5.2.1, "
            "Table 2: Adasum-Adam at 64K in LAMB's step counts; Adam alone not beyond 16K)"),
        ("adasum-optimizers", "LAMB: Adasum-LAMB reaches"): (
            "LAMB: Adasum-LAMB reaches the target in fewer steps than LAMB with averaging at the same large batch "
            "(MLSys 5.2.1, Table 2: 20% fewer, 5639 vs 7039 phase-1 steps)"),
        ("lpp-frequency", "on a measured H200"): (
            "Table 3 on a measured H200, B=128: T(U=8) within 5% of T(U=6) (saturation by U = 6; LAP-SGD real mode)"),
        ("lpp-table9", "Te.A.(MB/PL+LARS) > 0"): (
            "LAP-SGD and LPP-SGD (U 4, B_loc 256) generalize better than MB-SGD and PL-SGD with LARS at B_loc 1024: "
            "every Te.A.(LAP/LPP) - Te.A.(MB/PL+LARS) > 0"),
        ("adaptive-figures", "Adaptive SGD (paper defaults) reaches"): (
            "Adaptive SGD (paper defaults) reaches the highest accuracy first at 2 workers, vs the paper's Elastic "
            "(gamma 0.9) and gradient aggregation, equal time budgets, one shared lr (Adaptive SGD 5.2.1, Figs. 6-7)"),
        ("adaptive-figures", "Fig. 8b:"): (
            "Fig. 8b: Adaptive SGD needs fewer mega-batches to reach the target as workers are added (4 < 2 < 1 "
            "workers, paired by seed)"),
        ("adaptive-figures", "Fig. 8: Adaptive SGD at 4 workers"): (
            "Fig. 8: Adaptive SGD at 4 workers reaches a higher best P@1 than at 2 and at 1 worker(s), the same "
            "number of mega-batches"),
        ("adasum-guide", "the same number of steps, at every W in {2, 4, 8, 16} (Horovod"): (
            "Adasum at the single-worker best LR x 2.5 ends with a higher test accuracy than averaging at LR x W, the "
            "same number of steps, at every W in {2, 4, 8, 16} (Horovod AdaSum guide, 'Higher accuracy with the same "
            "number of steps', its MNIST case)"),
        ("diloco-lm", "converges faster on i.i.d. shards early"): (
            "Figure 5: DiLoCo converges faster on i.i.d. shards early on (lower perplexity at 25% of the steps)"),
        ("diloco-lm", "non-i.i.d. penalty shrinks"): (
            "Figure 5: the non-i.i.d. penalty shrinks from 25% of the steps to the end"),
        ("adasum-latency", "sometimes faster"): "Adasum's overhead over the baseline allreduce is below 45% (and it is "
                                                "sometimes faster) (MLSys 5.1.1, Fig. 1)",
        ("adasum-optimizers", "averaging baseline's tuned LR"): "Adasum converges, run with the averaging baseline's tuned LR",
        ("adasum-local-steps", "need more epochs to the target"): "Table 2: 16 local steps need more epochs to the "
                                                                   "target than 1 local step on the same 8-epoch schedule",
        ("adasum-local-steps", "still converge, in at most"): "Table 2: 16 local steps still converge, in at most 1.5x "
                                                               "the epochs of 1 local step (paper: 1.24x)",
        ("adasum-local-steps", "Ablation: with a 16-epoch budget"): "Ablation: with a 16-epoch budget, 16 local steps "
                                                                     "converge in at most 1.5x the epochs of 1 local step",
        ("adasum-local-steps", "Long schedule: 16 local steps get to the target in less simulated time"): (
            "Long schedule: 16 local steps get to the target in less simulated time than 1 local step on the clock "
            "set to Table 2's per-epoch times (paper: 166 vs 175 min)"),
        ("adasum-local-steps", "less simulated time"): "Table 2: 16 local steps reach the target in less simulated time "
                                                       "than 1 local step (paper: 166 vs 175 min on TCP)",
        ("lpp-table1", "keep"): "LAP/LPP keep the test accuracy of MB-SGD 128",
        ("lpp-table1", "fastest (simulated"): "LPP fastest (simulated time)",
        ("lpp-table1", "fastest (wall"): "LPP-SGD is the fastest (wall time)",
        ("lpp-table1", "At the equal simulated time"): "At the equal simulated time T* = 0.133 s, LAP/LPP (simulated) "
                                                       "keep MB-SGD 128's accuracy",
        ("lpp-table1", "Large local batch loses test accuracy"): "Large local batch loses test accuracy: Te.A.(MB 1024) "
                                                                  "- Te.A.(MB 128) < 0",
        ("lpp-table1", "LAP/LPP (simulated) keep the accuracy"): "LAP/LPP (simulated) keep the accuracy: every Te.A. - "
                                                                  "Te.A.(MB 128) > -0.5 points",
        ("lpp-table1-rule", "MB-SGD loses test accuracy at the larger local batch"): "MB-SGD loses test accuracy at the "
                                                                                  "larger local batch (paper: -1.57)",
        ("lpp-frequency", "no time advantage"): "Table 3: no time advantage beyond a saturation U",
        ("lpp-frequency", "time robust to K"): "Table 4: time robust to K (T - T(K=1) within 5%)",
        ("lpp-frequency", "accuracy flat"): "Table 3, B=128: accuracy flat in U",
        ("lpp-frequency", "accuracy flat in U"): "Table 3, B=128: accuracy flat in U (Te.A.(U) - Te.A.(U=4) within "
                                                 "+-1.0 point)",
        ("lpp-table9", "losing test accuracy at the larger B_loc"): "LARS does not stop MB-SGD and PL-SGD losing test "
                                                                       "accuracy at the larger B_loc",
        ("adaptive-bibtex", "Adaptive SGD (paper defaults) reaches"): "Adaptive SGD (paper defaults) reaches the highest accuracy first at 2 workers",
        ("adaptive-figures", "Adaptive SGD (paper defaults) reaches"): "Adaptive SGD (paper defaults) reaches the highest accuracy first at 4 workers",
        ("adaptive-sensitivity", "highest early accuracy (Fig. 10a),"): "Starting from b_max gives the highest early accuracy (Fig. 10a), 4 workers",
        ("adaptive-sensitivity", "perturbation fires"): "Perturbation fires in most merges (Fig. 12b), 4 workers",
        ("adaptive-sensitivity", "pert_thr inside the paper's 0.05-0.1"): (
            "pert_thr inside the paper's 0.05-0.1 changes how often the merge is perturbed (Fig. 11a), 4 workers"),
        ("adaptive-sensitivity", "beats gradient aggregation"): (
            "Adaptive SGD's mega-batch of 100 batches beats gradient aggregation (R9's arm: one local step, batch/W per "
            "worker) in best P@1 over the same samples (Fig. 9), 4 workers"),
        ("adaptive-sensitivity", "At equal simulated time, starting from b_max"): (
            "At equal simulated time, starting from b_max gives the highest early accuracy (Fig. 10a, "
            "time-to-accuracy), 4 workers: P@1 of a smaller initial batch minus the defaults' at the defaults' 8th "
            "evaluation time, below 0"),
        ("adaptive-sensitivity", "Batch sizes settle by speed"): (
            "Batch sizes settle by speed (Fig. 12a), 4 workers: rank correlation of worker speed and batch size over "
            "every mega-batch after a 20% burn-in above 0, and the spread (coefficient of variation) of the workers' "
            "updates below its first mega-batch's"),
        ("adaptive-sensitivity", "delta has a small effect"): (
            "delta has a small effect (within +-0.01 best P@1 of the default, Fig. 11b), 4 workers"),
        ("adaptive-sensitivity", "beta has a small effect"): (
            "beta has a small effect (within +-0.01 best P@1 of the default, Fig. 10b), 4 workers"),
        ("adaptive-sensitivity", "A larger mega-batch slows the initial epochs"): (
            "A larger mega-batch slows the initial epochs (Fig. 9), 4 workers: early P@1 of 100 batches minus 10 "
            "batches below 0"),
        ("adaptive-sensitivity", "performs as well as 20-50 batches"): (
            "A mega-batch of 100 batches performs as well as 20-50 batches over the whole budget (Fig. 9, section "
            "5.3), 4 workers: best P@1 minus the best of [20, 50] above -0.01"),
        ("diloco-lm", "lower perplexity than data-parallel training with an 8x batch"): "Table 2: DiLoCo (W = 8, H = 50) "
            "reaches a lower perplexity than data-parallel training with an 8x batch at the same steps, compute and "
            "data (paper: 15.02 vs 15.30)",
        ("diloco-lm", "fewer bytes per worker"): "Table 2: DiLoCo sends H times fewer bytes per worker than "
                                                 "data-parallel training (paper: 8 x N/H vs 8 x N)",
        ("diloco-lm", "outer Adam"): "Figure 6: outer Adam ends with a higher perplexity than outer Nesterov",
        ("diloco-lm", "only mildly"): "Figure 4: the perplexity rises only mildly with 8x less communication (H = 200 "
                                      "vs 25: below the paper's +2.9% at 20x)",
        ("diloco-lm", "comparable perplexity at the end"): "Figure 5: i.i.d. and non-i.i.d. shards attain comparable "
                                                           "perplexity at the end (per-character perplexities within 1%)",
        ("streaming-diloco", "ends within the paper's largest gap to data parallelism"): sm.C_DP_GAP,
        ("streaming-diloco", "cut the largest message of a round"): sm.C_PEAK,
        ("adasum-optimizers", "in fewer steps than averaging with the linear"): (
            "At the large batch (the per-worker batch x 8, W fixed), Adasum with the small-batch hyperparameters plus "
            "only a base-LR search reaches the small-batch accuracy in fewer steps than averaging with the linear LR "
            "scaling rule (momentum SGD; MLSys 5.2.2, arXiv 1)"),
        ("adasum-optimizers", "while averaging with the linear rule does not"): (
            "At the large batch, Adasum (small-batch hyperparameters plus a base-LR search) reaches the small-batch "
            "accuracy while averaging with the linear rule does not (MLSys 5.2.2)"),
        ("adasum-optimizers", "with the small-batch hyperparameters unchanged"): (
            "Adasum reaches the small-batch accuracy at the large batch with the small-batch hyperparameters unchanged, "
            "without any tuning (MLSys 5.2.2: 'with the same hyperparameters as the 2K minibatch size')"),
        ("adasum-optimizers", "Ablation: Adasum still needs fewer steps"): (
            "Ablation: Adasum still needs fewer steps to the small-batch accuracy when averaging also gets an LR search "
            "(its rule LR times 0.25, 0.5, 1, chosen on validation)"),
        ("adasum-optimizers", "ends with a higher test accuracy than averaging"): (
            "At the large batch, Adasum (small-batch hyperparameters plus a base-LR search) ends with a higher test "
            "accuracy than averaging with the linear rule"),
        ("streaming-diloco", "splitting DiLoCo's outer synchronization"): sm.C_FRAG.format(ps="2 and 4"),
        ("streaming-diloco", "overlapping each fragment's communication"): sm.C_OVER.format(taus="1, 5, 10",
                                                                                          alphas="0 and 0.5"),
        ("streaming-diloco", "outer gradients sent at"): sm.C_QUANT.format(bits="16, 8, 4"),
        ("streaming-diloco", "fewer bytes per worker than data parallelism"): sm.C_BYTES,
        ("streaming-diloco", "without overlap needs less bandwidth than DiLoCo"): sm.C_CU_SPLIT,
        ("streaming-diloco", "overlap (tau = 1) with FP4 needs less bandwidth than DiLoCo"): sm.C_CU_OVER,
        ("streaming-diloco", "two orders of magnitude more bandwidth"): sm.C_CU_DP,
    }

    def test_every_rule_fires_on_its_claim(self):
        for t in catalog.TARGETS:
            for r in t.rules:
                with self.subTest(target=t.name, rule=r.match):
                    text = self.CLAIMS[(t.name, r.match)]
                    v, note = report.classify(t, text, "HOLDS")
                    self.assertEqual(st.verdict_class(v), r.verdict)
                    self.assertIn("the data alone: HOLDS", note)

    def test_rules_leave_the_workbenchs_own_ablations_alone(self):
        for name, claim in (("adaptive-figures", "Ablation, 2 workers: Adaptive [renormalize=True] (ablation) "
                                                 "reaches the highest accuracy first"),
                            ("adaptive-sensitivity", "Ablation, 4 workers: pert_thr=0.0 lifts the final P@1"),
                            ("adaptive-sensitivity", "Ablation, 4 workers: renormalize=True lifts the final P@1 above "
                                                     "the paper defaults'"),
                            ("adaptive-sensitivity", "Ablation, 4 workers: gamma=0.0 lifts the final P@1 above the "
                                                     "paper defaults'"),
                            ("adaptive-sensitivity", "Collapse, 4 workers: with the paper defaults (Algorithm 2 as "
                                                     "written) the final P@1 ends more than 0.01 below the run's peak")):
            v, _ = report.classify(catalog.get(name), claim, "HOLDS", "+0.1 [+0.05, +0.15]")
            self.assertEqual(v, HOLDS, claim)

    def test_each_drops_rule_takes_its_own_arm(self):
        # R3: the same paper claim in two rows, each with its own rule and reason: the LeNet-5 row
        # (no normalization, no weight decay) and the BatchNorm ResNet arm's row (its state at the
        # deciding boundary is not the paper's); neither rule takes the other's row
        from psgd_analysis import adasum_orthogonality as r3
        t = catalog.get("adasum-orthogonality")
        v, _ = report.classify(t, r3.R3_DROPS, "DOES NOT HOLD", "-0.2 [-0.3, -0.1]")
        self.assertEqual(st.verdict_class(v), st.NOT_TESTED)
        self.assertIn("LeNet-5 here has neither", v)
        v, _ = report.classify(t, r3.R3_DROPS_BN, "DOES NOT HOLD", "-0.2 [-0.3, -0.1]")
        self.assertEqual(st.verdict_class(v), st.NOT_TESTED)
        self.assertIn("not in the paper's state", v)
        self.assertNotIn("LeNet-5 here has neither", v)

    def test_no_rule_fires_on_an_unrelated_claim(self):
        for t in catalog.TARGETS:
            with self.subTest(target=t.name):
                v, note = report.classify(t, "Adasum's error is below sync SGD's", "DOES NOT HOLD", "+1.0 [+0.5, +1.5]")
                if t.name != "adasum-seq-error":
                    self.assertEqual(v, FAILS)
                    self.assertEqual(note, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
