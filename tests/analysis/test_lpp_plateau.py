#!/usr/bin/python3
"""The R7/R8 plateau protocol's rules (psgd_analysis/lpp_plateau.py: plateau_stats, probe_check,
select_check; psgd_analysis/lpp.py: alpha0), each run on made-up runs where it must pass and where
it must fail.
Run: /usr/bin/python3 -m unittest tests/analysis/test_lpp_plateau.py -v
"""
import os
import sys
import unittest

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import lpp  # noqa: E402
from psgd_analysis import lpp_frequency, lpp_plateau, lpp_table9, lpp_time  # noqa: E402
from psgd_analysis import report  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402


# Table 9's made-up cells: five seeds each, test accuracies base shifted by d (shift adds a per-seed trend,
# so a difference between two shifted cells is constant and one against base is not).
T9_BASE = [0.900, 0.905, 0.898, 0.903, 0.901]


def t9_shift(d):
    return [a + d + 0.001 * i for i, a in enumerate(T9_BASE)]


def t9_cell(method, U, B, opt, accs, key=None, lr=0.1):
    runs = [{"seed": s, "test_acc": a, "train_acc": 1.0, "method": method, "U": U, "B": B, "opt": opt, "lr": lr}
            for s, a in enumerate(accs, 1)]
    return lpp.Cell(key or (method, U, B, opt), "{} {} {}".format(method, B, opt), runs)


def probe_run(E, acc_of_epoch, method="MB-SGD", algo="sync_sgd"):
    ep = np.arange(1, int(E) + 1, dtype=float)
    return {"file": "lpp_plateau_probe.h5", "epochs": E, "method": method, "algo": algo, "U": 1, "B": 128,
            "mode": "sync", "test_acc": 0.9, "config": {"metrics": {"train_eval_samples": 10000}},
            "curves": pd.DataFrame({"epoch": ep, "train_accuracy": [acc_of_epoch(e, E) for e in ep]})}


def saturating(e, E):   # reaches 0.95 by 60% of the run, then flat
    return 0.95 - 0.3 * max(0.0, 0.6 - e / E)


def rising(e, E):       # still gains 1 point over the last 20%
    return 0.90 + 0.05 * e / E


def cfg_run(algo, lr, sched, seed=1, val=float("nan"), file="lpp_plateau_select.h5"):
    return {"file": file, "algo": algo, "lr": lr, "seed": seed, "val_acc": val, "status": "completed",
            "config": {"schedule": sched, "epochs": 10.0, "metrics": {"validation_fraction": 0.1}}, "epochs": 10.0}


MS = {"name": "warmup_scaled", "scale": 2.0, "warmup_epochs": 0.2, "milestones": [5, 7.5]}


def cos(ratio):
    return {"name": "cosine", "warmup_epochs": 0.2, "warmup_start_factor": 1 / ratio}


class Diverged(unittest.TestCase):
    """A blown-up run (max_loss in the main plateau specs) is counted, not averaged."""

    def run_(self, seed, status, acc):
        return {"seed": seed, "status": status, "test_acc": acc, "train_acc": acc, "error": "training loss 3e5 "
                "above max_loss at step 40" if status == "diverged" else "", "ev_sim": np.array([1.0, 2.0]),
                "ev_acc": np.array([0.5, acc])}

    def test_cell_counts_and_excludes(self):
        runs = [self.run_(1, "completed", 0.90), self.run_(2, "completed", 0.92), self.run_(3, "diverged", float("nan"))]
        c = lpp.Cell(("LAP-SGD", 6, 128, "simulated"), "LAP-SGD U=6 B=128 simulated", runs)
        self.assertEqual(c.n_txt, "3 (1 diverged)")
        self.assertAlmostEqual(c.mean("test_acc"), 0.91)
        lines = lpp.diverged_lines([c])
        self.assertEqual(len(lines), 1)
        self.assertIn("LAP-SGD U=6 B=128 simulated seed 3: training loss 3e5", lines[0])
        self.assertEqual(lpp.diverged_lines([lpp.Cell("k", "ok", runs[:2])]), [])
        self.assertEqual(lpp.Cell("k", "ok", runs[:2]).n_txt, "2")

    def test_no_accuracy_after_the_blow_up(self):
        r = self.run_(3, "diverged", 0.7)
        self.assertTrue(np.isnan(lpp.acc_at(r, 5.0)))      # after its last evaluation: no model
        self.assertAlmostEqual(lpp.acc_at(r, 1.5), 0.6)     # before: the curve as logged
        r["status"] = "completed"
        self.assertAlmostEqual(lpp.acc_at(r, 5.0), 0.7)     # a finished run keeps its final accuracy

    def test_main_specs_guard_selection_and_probe_do_not(self):
        import json
        from psgd_analysis import catalog
        catalog.ensure_specs([s for g in catalog.GENERATED for s in g.specs])
        for name, guarded in (("lpp_table1_plateau_dp", True), ("lpp_table1_plateau_lap", True),
                              ("lpp_table1_plateau_lpp", True), ("lpp_frequency_plateau_k", True),
                              ("lpp_table9_plateau", True), ("lpp_plateau_select", False),
                              ("lpp_plateau_probe", False)):
            with open(catalog.spec_path(name)) as fh:
                base = json.load(fh)["base"]
            self.assertEqual("max_loss" in base, guarded, name)


class Plateau(unittest.TestCase):
    def test_flat_tail_passes_and_rising_tail_fails(self):
        fin, gain, pe = lpp_plateau.plateau_stats(probe_run(40, saturating))
        self.assertAlmostEqual(fin, 0.95)
        self.assertLess(gain, lpp_plateau.PLATEAU_PP / 100)
        self.assertLessEqual(pe, 0.6 * 40 + 1)      # flat from ~60% of the run
        _, gain, _ = lpp_plateau.plateau_stats(probe_run(40, rising))
        self.assertGreater(gain, lpp_plateau.PLATEAU_PP / 100)

    def test_budget_check(self):
        ok = lpp_plateau.probe_check([probe_run(40, saturating), probe_run(20, saturating)], 40.0)[1]
        self.assertTrue(ok)
        # the amended rule: the reference family (MB-SGD at B_loc 128) decides the budget; another family
        # still rising is compared at the equal budget, and the first rule (every family) says so
        L, ok = lpp_plateau.probe_check([probe_run(40, saturating), probe_run(40, rising, "LAP-SGD", "lap_sgd")], 40.0)
        self.assertTrue(ok)
        self.assertIn("The first rule (every family): not reached (LAP-SGD U=1 B=128 (+0.87 over its last 20%):",
                      "\n".join(L))
        # a family flat in its own tail that gained from E/2 is named with that gain
        L = lpp_plateau.probe_check([probe_run(40, saturating), probe_run(40, saturating, "LAP-SGD", "lap_sgd"),
                             probe_run(20, lambda e, E: saturating(e, E) - 0.02, "LAP-SGD", "lap_sgd")], 40.0)[0]
        self.assertIn("LAP-SGD U=1 B=128 (+2.00 from E/2)", "\n".join(L))
        # the reference still rising fails it, whatever the other families do
        self.assertFalse(lpp_plateau.probe_check([probe_run(40, rising), probe_run(40, saturating, "LAP-SGD", "lap_sgd")],
                                         40.0)[1])
        # no reference run at the main budget: not shown, even when every other family is flat
        self.assertFalse(lpp_plateau.probe_check([probe_run(40, saturating, "LAP-SGD", "lap_sgd")], 40.0)[1])
        big = probe_run(40, rising)
        big["B"] = 1024  # the large batch is not the reference
        self.assertTrue(lpp_plateau.probe_check([probe_run(40, saturating), big], 40.0)[1])
        # each run flat in its own tail, but doubling the budget gains 2 points: not a plateau
        low = probe_run(20, lambda e, E: saturating(e, E) - 0.02)
        self.assertFalse(lpp_plateau.probe_check([probe_run(40, saturating), low], 40.0)[1])
        # no probe run at the main budget: not shown
        self.assertFalse(lpp_plateau.probe_check([probe_run(20, saturating)], 40.0)[1])
        self.assertIsNone(lpp_plateau.probe_check([], 40.0)[1])


class Alpha0(unittest.TestCase):
    def test_alpha0_from_the_schedule(self):
        self.assertAlmostEqual(lpp.alpha0(cfg_run("sync_sgd", 0.01, MS)), 0.01)       # warmup_scaled starts at lr
        self.assertAlmostEqual(lpp.alpha0(cfg_run("lap_sgd", 0.04, cos(4.0))), 0.01)  # cosine: lr x start factor
        self.assertAlmostEqual(lpp.alpha0(cfg_run("lpp_sgd", 0.025, cos(2.5))), 0.01)

    def test_selection_picks_the_best_mean_and_checks_the_main_cells(self):
        sel = [cfg_run("sync_sgd", a, MS, s, v) for a, vs in ((0.005, (0.80, 0.81)), (0.01, (0.85, 0.84)),
                                                              (0.02, (0.82, 0.83))) for s, v in zip((101, 102), vs)]
        main_ok = [cfg_run("sync_sgd", 0.01, MS, file="lpp_table1_plateau_dp.h5")]
        main_bad = [cfg_run("sync_sgd", 0.02, MS, file="lpp_table1_plateau_dp.h5")]
        _, ok, pick = lpp_plateau.select_check(sel, main_ok)
        self.assertEqual(pick, {"DP": 0.01})            # mean 0.845 beats 0.825 and 0.805
        self.assertTrue(ok)
        self.assertFalse(lpp_plateau.select_check(sel, main_bad)[1])
        self.assertIsNone(lpp_plateau.select_check([], main_ok)[1])
        # a seed that diverges at the best mean's alpha0 counts as 0, not as a missing value
        bad = [dict(r, val_acc=float("nan"), status="diverged") if (r["lr"], r["seed"]) == (0.01, 102) else r
               for r in sel]
        self.assertEqual(lpp_plateau.select_check(bad, main_ok)[2], {"DP": 0.02})

    def test_large_batch_is_its_own_family(self):
        # MB-SGD at B_loc 1024 picks its own alpha0: the B_loc 128 choice (0.02 here) would diverge there
        sel = [dict(cfg_run("sync_sgd", a, MS, s, v), B=B)
               for B, a, v in ((128, 0.01, 0.84), (128, 0.02, 0.86), (1024, 0.01, 0.80), (1024, 0.02, 0.10))
               for s in (101, 102)]
        _, ok, pick = lpp_plateau.select_check(sel, [])
        self.assertEqual(pick, {"DP": 0.02, "DP1024": 0.01})
        good = [dict(cfg_run("sync_sgd", 0.02, MS, file="m.h5"), B=128), dict(cfg_run("sync_sgd", 0.01, MS, file="m.h5"), B=1024)]
        self.assertTrue(lpp_plateau.select_check(sel, good)[1])
        # the old rule (B_loc 1024 scaled from DP's choice) now fails the check
        scaled = [good[0], dict(good[1], lr=0.02)]
        self.assertFalse(lpp_plateau.select_check(sel, scaled)[1])

    def test_failed_check_makes_the_claim_not_tested(self):
        self.assertEqual(lpp.not_tested(st.HOLDS, ""), st.HOLDS)
        v = lpp.not_tested(st.HOLDS, "budget below the plateau")
        self.assertEqual(st.verdict_class(v), st.NOT_TESTED)
        self.assertIn("the data alone: HOLDS", v)


class MeasuredU(unittest.TestCase):
    TABLE = """LAP-SGD real mode on a GPU, made up:
text

| batch | U=1 | U=2 | U=6 | U=8 | T(8)/T(6) - 1 per seed |
|---:|---:|---:|---:|---:|---:|
| 128 | 1.000 ms [0.990-1.010] | 0.600 [0.590-0.610] | 0.500 [0.499-0.501] | 0.490 [0.489-0.491] | -2.0%, -2.1%, -1.9% |
| 256 | 1.500 ms [1.400-1.600] | 1.000 [0.990-1.010] | 0.900 [0.890-0.910] | 0.700 [0.690-0.710] | -22.0%, -23.0%, -21.0% |
"""

    def test_parse_and_decide(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write(self.TABLE)
        try:
            t, what = lpp_frequency.measured_u_sweep(fh.name)
            self.assertEqual(what, "LAP-SGD real mode on a GPU, made up:")
            self.assertEqual(t[128]["ms"][6], (0.5, 0.499, 0.501))
            self.assertEqual(t[256]["t8_t6"], [-0.22, -0.23, -0.21])
            _, claims = lpp_frequency.measured_u_claims(fh.name)
            verdicts = {c[0].split(",")[1].strip().split(":")[0]: c[2] for c in claims}
            self.assertEqual(verdicts, {"B=128": st.HOLDS, "B=256": st.FAILS})  # -2% inside 5%; -22% outside
        finally:
            os.unlink(fh.name)
        self.assertEqual(lpp_frequency.measured_u_sweep("/nonexistent.txt"), ({}, ""))

    def test_stage_summary_line_the_script_reads(self):
        # scripts/lpp_plateau_run.sh starts ~10 CPU-hours of main runs on "^plateau: reached at "
        import unittest.mock as um
        for runs, want in (([probe_run(40, saturating), probe_run(20, saturating)], "plateau: reached at 40 epochs"),
                           ([probe_run(40, rising), probe_run(20, rising)], "plateau: not reached at 40 epochs")):
            with um.patch.object(lpp_plateau, "load_runs", return_value=(runs, None)), \
                 um.patch.object(lpp_plateau, "role", return_value="probe"):
                self.assertEqual(lpp_plateau.stage_summary(["x.h5"], 40.0).splitlines()[-1], want)

    def test_probe_description_names_each_familys_alpha0(self):
        # The probe's description once read "DP 0.02, LAP 0.0025, LPP 0.01 ... again at 0.01 epochs":
        # its format arguments included DP1024's alpha0 where the text had no slot for it.
        import json
        import subprocess
        import tempfile
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([sys.executable, os.path.join(root, "scripts", "lpp_plateau_specs.py"), "--epochs", "80",
                            "--probe-epochs", "80", "40", "--out", d, "--alpha0",
                            '{"dp": 0.02, "dp1024": 0.0025, "lap": 0.01, "lpp": 0.03}'],
                           check=True, capture_output=True)
            desc = json.load(open(os.path.join(d, "lpp_plateau_probe.json")))["description"]
        self.assertIn("DP 0.02, DP1024 0.0025, LAP 0.01, LPP 0.03;", desc)
        self.assertIn("again at 40 epochs", desc)

    def test_generated_specs_follow_the_catalogs_choice(self):
        # The plateau specs are not committed: make writes them from scripts/lpp_plateau_specs.py with the
        # arguments of catalog.LPP_PLATEAU_SPECS (the probe's budget and the selections' alpha0). The script
        # must write exactly the specs the catalog lists, the same bytes on every run (a results file is
        # re-made when its spec's bytes change), and the choice must reach the specs.
        import json
        import subprocess
        import tempfile
        from psgd_analysis import catalog
        g = catalog.LPP_PLATEAU_SPECS
        root = catalog.ROOT
        choice = json.loads(g.args[g.args.index("--alpha0") + 1])
        E = float(g.args[g.args.index("--epochs") + 1])
        with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
            for d in (d1, d2):
                subprocess.run([sys.executable, *g.command(d)], cwd=root, check=True, capture_output=True)
            written = sorted(f[:-5] for f in os.listdir(d1) if f.endswith(".json"))
            self.assertEqual(written, sorted(g.specs))
            for f in written:
                with self.subTest(f):
                    with open(os.path.join(d1, f + ".json")) as a, open(os.path.join(d2, f + ".json")) as b:
                        self.assertEqual(a.read(), b.read(), f + ": the script wrote other bytes the second time")
            # a rerun into a folder that holds them rewrites none (make keeps the results files current)
            before = {f: os.stat(os.path.join(d1, f)).st_mtime_ns for f in os.listdir(d1)}
            subprocess.run([sys.executable, *g.command(d1)], cwd=root, check=True, capture_output=True)
            self.assertEqual(before, {f: os.stat(os.path.join(d1, f)).st_mtime_ns for f in os.listdir(d1)})
            with open(os.path.join(d1, "lpp_table1_plateau_dp.json")) as fh:
                dp = json.load(fh)
            with open(os.path.join(d1, "lpp_table9_plateau.json")) as fh:
                t9 = json.load(fh)
        self.assertEqual(dp["base"]["epochs"], E)
        self.assertEqual([c[:2] for c in dp["sweep"]["batch_size+lr+schedule+eval_every"]],
                         [[128, choice["dp"]], [1024, choice["dp1024"]]])
        self.assertEqual(t9["base"]["lr"], choice["lars1024"])

    def test_lars_is_its_own_family(self):
        r = {"algo": "sync_sgd", "B": 1024, "opt": "lars"}
        self.assertEqual(lpp.family(r), "LARS1024")
        self.assertEqual(lpp.family(dict(r, algo="post_local_sgd")), "LARS1024")
        self.assertEqual(lpp.family(dict(r, opt="sgd")), "DP1024")
        self.assertEqual(lpp.family(dict(r, B=128)), "LARS")

    def test_table9_claims_decide_both_ways(self):
        ref = [t9_cell("MB-SGD", 1, 128, "sgd", T9_BASE), t9_cell("PL-SGD", 1, 128, "sgd", t9_shift(-0.002)),
               t9_cell("LAP-SGD", 4, 256, "sgd", t9_shift(0.001)), t9_cell("LPP-SGD", 4, 256, "sgd", t9_shift(0.0))]
        lose = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.05)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.06))]
        v = [row[2] for row in lpp_table9.table9_claims(ref + lose)]
        self.assertEqual(v, [st.HOLDS, st.HOLDS])
        win = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(0.03)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(0.02))]
        v = [row[2] for row in lpp_table9.table9_claims(ref + win)]
        self.assertEqual(v, [st.FAILS, st.FAILS])
        # a failed protocol check keeps the data's verdict in view but does not decide
        v = lpp_table9.table9_claims(ref + lose, why="the probe failed")[0][2]
        self.assertTrue(v.startswith(st.NOT_TESTED) and st.HOLDS in v, v)
        # without the LAP/LPP cells only the first claim is made
        self.assertEqual(len(lpp_table9.table9_claims(ref[:2] + lose)), 1)

    def test_table9_reading_and_ablation(self):
        ref = [t9_cell("MB-SGD", 1, 128, "sgd", T9_BASE), t9_cell("PL-SGD", 1, 128, "sgd", t9_shift(-0.002)),
               t9_cell("LAP-SGD", 4, 256, "sgd", t9_shift(-0.012)), t9_cell("LPP-SGD", 4, 256, "sgd", t9_shift(-0.011))]
        win = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(0.005)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.001))]
        claims = lpp_table9.table9_claims(ref + win)
        self.assertEqual(claims[1][2], st.FAILS)
        text = "\n".join(lpp_table9.table9_reading(ref + win, claims))
        self.assertIn("Why the second claim does not hold", text)
        self.assertIn("| LAP-SGD 256 sgd | -1.00 [", text)        # each row against MB-SGD B=128, in points
        self.assertIn("7.2 to 8.2 points below LAP/LPP", text)   # the paper's gap, from paper.LPP_T9
        # a claim that holds needs no reading
        lose = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.05)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.06))]
        self.assertEqual(lpp_table9.table9_reading(ref + lose, lpp_table9.table9_claims(ref + lose)), [])
        # the ablation: pending at the plateau, a table once its runs are there (each column paired by seed)
        self.assertIn("Not among this report's inputs", "".join(lpp_table9.table9_ablation(ref + win, [])))
        self.assertEqual(lpp_table9.table9_ablation(ref + win, [], plateau=False), [])
        abl = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.04), key=("MB-SGD", 0.1))]
        self.assertIn("end 7.2-8.2 points below LAP/LPP", "".join(lpp_table9.table9_ablation(ref + win, abl)))
        rows = [l for l in lpp_table9.table9_ablation(ref + win, abl) if l.startswith("| MB-SGD")]
        self.assertEqual(len(rows), 1)
        cols = [c.strip() for c in rows[0].split("|")[1:-1]]
        self.assertTrue(cols[4].startswith("-4.50 ["), cols)   # - the same row at the chosen alpha0
        self.assertTrue(cols[5].startswith("-3.80 ["), cols)   # - MB-SGD B=128
        self.assertTrue(cols[6].startswith("-2.80 ["), cols)   # - LAP-SGD U=4 B=256

    def test_table9_ablation_claims(self):
        ref = [t9_cell("MB-SGD", 1, 128, "sgd", T9_BASE), t9_cell("PL-SGD", 1, 128, "sgd", t9_shift(-0.002)),
               t9_cell("LAP-SGD", 4, 256, "sgd", t9_shift(-0.012)), t9_cell("LPP-SGD", 4, 256, "sgd", t9_shift(-0.011)),
               t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.012)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.007))]

        def ablation(d_mb, d_pl, why=""):
            abl = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(d_mb), key=("MB-SGD", 0.1)),
                   t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(d_pl), key=("PL-SGD", 0.1))]
            L = lpp_table9.table9_ablation(ref, abl, why=why)
            return [c["verdict"] for c in report.table_claims(["## Ablation"] + L)], "\n".join(L)

        # The paper's picture: at alpha0 0.1 the LARS rows fall far below LAP/LPP and below their chosen alpha0.
        v, text = ablation(-0.08, -0.09)
        self.assertEqual(v, [st.HOLDS, st.HOLDS, st.HOLDS], text)   # lose, order, alpha
        self.assertIn("Table 9's ordering appears", text)
        self.assertIn("part of the paper's gap can come from its alpha0", text)
        # alpha0 0.1 above the chosen one, and LAP/LPP below both LARS rows
        v, text = ablation(0.002, 0.001)
        self.assertEqual(v, [st.FAILS, st.FAILS, st.FAILS], text)
        self.assertIn("does not make the LARS rows lose", text)
        self.assertIn("+1.40 and +0.80 points", text)         # 0.1 - chosen, paired by seed
        self.assertIn("at 0.1 end +0.40 and +0.30 points and LAP/LPP -1.00 and -0.90", text)  # vs MB-SGD 128
        self.assertIn("the gap is not there", text)
        # Within the seeds' noise: neither decided, and the reading says no more than that.
        noisy = [0.900, 0.880, 0.915, 0.890, 0.905]
        abl = [t9_cell("MB-SGD", 1, 1024, "lars", [a - 0.012 for a in noisy], key=("MB-SGD", 0.1)),
               t9_cell("PL-SGD", 1, 1024, "lars", [a - 0.007 for a in noisy], key=("PL-SGD", 0.1))]
        L = lpp_table9.table9_ablation(ref, abl)
        v = [c["verdict"] for c in report.table_claims(["## Ablation"] + L)]
        self.assertEqual(v[2], st.INCONCLUSIVE, L)
        self.assertIn("no decided difference", "\n".join(L))
        # A failed protocol check: NOT TESTED, the data's verdict kept in view
        v, _ = ablation(-0.08, -0.09, why="the probe failed")
        self.assertTrue(all(x.startswith(st.NOT_TESTED) for x in v), v)
        # Without the chosen-alpha0 rows only the first ablation claim is made
        abl = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.08), key=("MB-SGD", 0.1)),
               t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.09), key=("PL-SGD", 0.1))]
        L = lpp_table9.table9_ablation(ref[:4], abl)
        self.assertEqual(len(report.table_claims(["## Ablation"] + L)), 2)   # lose and order

    def test_table9_first_claim_rests_on_alpha0(self):
        noisy = (lambda d: [a + d for a in [0.900, 0.880, 0.915, 0.890, 0.905]])
        # the chosen alpha0 loses a point against the small batch: the first claim holds on these rows
        cells = [t9_cell("MB-SGD", 1, 128, "sgd", T9_BASE), t9_cell("PL-SGD", 1, 128, "sgd", t9_shift(-0.002)),
                 t9_cell("LAP-SGD", 4, 256, "sgd", t9_shift(-0.012)), t9_cell("LPP-SGD", 4, 256, "sgd", t9_shift(-0.011)),
                 t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.012)), t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.007))]
        c = {x.key: x for x in cells}
        claims = lpp_table9.table9_claims(cells)
        self.assertEqual(claims[0][2], st.HOLDS)
        abl = (lambda d: [t9_cell("MB-SGD", 1, 1024, "lars", noisy(d), key=("MB-SGD", 0.1)),
                          t9_cell("PL-SGD", 1, 1024, "lars", noisy(d - 0.002), key=("PL-SGD", 0.1))])
        # at 0.1 the rows end higher than at the chosen alpha0 and level with the small batch: it rests on alpha0
        up = [t9_cell("MB-SGD", 1, 1024, "lars", [a + 0.004 * (i % 2) for i, a in enumerate(T9_BASE)], key=("MB-SGD", 0.1)),
              t9_cell("PL-SGD", 1, 1024, "lars", [a - 0.002 + 0.004 * (i % 2) for i, a in enumerate(T9_BASE)],
                   key=("PL-SGD", 0.1))]
        check = (lambda ab: lpp_table9.table9_alpha0_check(claims, lpp_table9.table9_ablation_verdicts(c, ab)))
        out, moved = check(up)
        self.assertTrue(moved)
        self.assertTrue(out[0][2].startswith(st.INCONCLUSIVE + " (") and "the data alone: HOLDS" in out[0][2], out[0][2])
        self.assertEqual(out[1], claims[1])
        # the engine keeps the reason and what the data alone say
        target = type("T", (), {"rules": ()})()
        v, note = report.classify(target, out[0][0], out[0][2])
        self.assertTrue(v.startswith(st.INCONCLUSIVE + " (at the alpha0 chosen"), v)
        self.assertEqual(note, "the data alone: HOLDS")
        text = "\n".join(lpp_table9.table9_ablation(cells, up, moved=moved))
        self.assertIn("first claim is therefore INCONCLUSIVE above", text)
        self.assertIn("a rule written after this ablation's first seeds were in", text)
        self.assertNotIn("first claim is therefore", "\n".join(lpp_table9.table9_ablation(cells, up)))
        # the paper's alpha0 decidedly worse than the chosen one: the chosen alpha0's verdict stands
        down = abl(-0.05)
        self.assertEqual(check(down), (claims, False))
        # no ablation, or the same verdict at 0.1: unchanged
        self.assertEqual(check([]), (claims, False))
        same = [t9_cell("MB-SGD", 1, 1024, "lars", t9_shift(-0.011), key=("MB-SGD", 0.1)),
                t9_cell("PL-SGD", 1, 1024, "lars", t9_shift(-0.006), key=("PL-SGD", 0.1))]
        self.assertEqual(check(same), (claims, False))

    def test_committed_measurement_parses(self):
        t, _ = lpp_frequency.measured_u_sweep()
        self.assertEqual(sorted(t), [128, 256])
        self.assertEqual(len(t[128]["t8_t6"]), 3)


def timed_run(file, E, per_epoch, algo="lap_sgd", U=4, clock=None, sim_s=None, eval_epochs=()):
    """A run whose simulated time per epoch is per_epoch(fraction of the budget): two phases when it steps."""
    ep = np.linspace(E / 40, E, 40)
    t = np.cumsum([per_epoch((e - E / 80) / E) * E / 40 for e in ep])
    acc = [0.9 if any(abs(e - x) < 1e-9 for x in eval_epochs) else np.nan for e in ep]
    return {"file": file, "epochs": E, "algo": algo, "method": lpp.METHOD.get(algo, algo), "U": U, "B": 128, "H": 16,
            "switch_at": 0.5, "mode": "simulated", "opt": "sgd", "seed": 1, "status": "completed",
            "config": {"clock": clock or {"flops_per_s": 2e12}}, "sim_s": float(t[-1]) if sim_s is None else sim_s,
            "ev_sim": np.array([]), "ev_epoch": np.array([e for e in ep if any(abs(e - x) < 1e-9 for x in eval_epochs)]),
            "curves": pd.DataFrame({"epoch": ep, "sim_s": t, "test_accuracy": acc})}


class Reprice(unittest.TestCase):
    """reprice: a main run's simulated time from lpp_plateau_time's run of its cell, scaled by the budget."""
    PROF = {"profile": "calib/lpp-gpu-h200.json"}

    @staticmethod
    def two_phase(f):  # 1 s per epoch for the first half (K = 1), 0.5 s after it
        return 1.0 if f < 0.5 else 0.5

    def test_main_run_takes_the_profiles_time_per_epoch(self):
        main = timed_run("lpp_table1_plateau_lap.h5", 320.0, lambda f: 0.01, eval_epochs=(160.0, 320.0))
        t8 = timed_run("lpp_plateau_time.h5", 8.0, self.two_phase, clock=self.PROF)
        t16 = timed_run("lpp_plateau_time.h5", 16.0, self.two_phase, clock=self.PROF)
        probe = timed_run("lpp_plateau_probe.h5", 320.0, lambda f: 0.01)
        lines = lpp_time.reprice([main, t8, t16, probe])
        # 320 epochs at 1 s then 0.5 s per epoch: 160 + 80 s; at epoch 160, 160 s
        self.assertAlmostEqual(main["sim_s"], 240.0, places=6)
        self.assertAlmostEqual(main["sim_s_spec"], 3.2, places=6)
        np.testing.assert_allclose(main["ev_sim"], [160.0, 240.0], rtol=1e-9)
        self.assertEqual(main["priced_by"], "lpp_plateau_time.h5")
        self.assertNotIn("sim_s_spec", probe)  # not a main run: untouched
        self.assertTrue(any("Budget scaling" in ln and "+0.000%" in ln for ln in lines), lines)

    def test_a_run_on_the_profile_is_checked_against_its_repricing(self):
        lpp_main = timed_run("lpp_table1_plateau_lpp.h5", 320.0, lambda f: 0.75, algo="lpp_sgd", clock=self.PROF)
        t8 = timed_run("lpp_plateau_time.h5", 8.0, lambda f: 0.75, algo="lpp_sgd", clock=self.PROF)
        lines = lpp_time.reprice([lpp_main, t8])
        self.assertTrue(any("+0.000% to +0.000%" in ln for ln in lines), lines)
        other = timed_run("lpp_table1_plateau_lpp.h5", 320.0, lambda f: 0.75, algo="lpp_sgd", clock=self.PROF,
                          sim_s=200.0)  # its own time 200 s, the repricing 240 s
        self.assertTrue(any("+20.000%" in ln for ln in lpp_time.reprice([other, t8])))

    def test_a_collapsed_runs_cut_evaluations_stay_cut(self):
        # load_runs keeps a collapsed run's evaluations up to the collapse (ev_epoch); repricing maps those
        # only, never the chance-level ones after it that the curves still hold
        main = timed_run("lpp_table1_plateau_lap.h5", 320.0, lambda f: 0.01, eval_epochs=(160.0, 320.0))
        main["ev_epoch"] = main["ev_epoch"][:1]
        t8 = timed_run("lpp_plateau_time.h5", 8.0, self.two_phase, clock=self.PROF)
        lpp_time.reprice([main, t8])
        np.testing.assert_allclose(main["ev_sim"], [160.0], rtol=1e-9)

    def test_the_time_note_names_the_time_runs_profile(self):
        t8 = timed_run("lpp_plateau_time.h5", 8.0, self.two_phase, clock={"profile": "calib/other.json"})
        note = lpp_time.time_note(["- a check line"], lpp_time.time_profiles([t8]))
        self.assertIn("`calib/other.json` through", note)
        self.assertIn("- a check line", note)

    def test_a_run_without_a_time_cell_is_named(self):
        main = timed_run("lpp_table1_plateau_lap.h5", 320.0, lambda f: 0.01, U=6)
        t8 = timed_run("lpp_plateau_time.h5", 8.0, self.two_phase, clock=self.PROF)  # U = 4 only
        lines = lpp_time.reprice([main, t8])
        self.assertNotIn("sim_s_spec", main)
        self.assertTrue(any("1 main run(s) have no cell" in ln and "U=6" in ln for ln in lines), lines)

    def test_without_time_runs_nothing_changes(self):
        main = timed_run("lpp_table1_plateau_lap.h5", 320.0, lambda f: 0.01)
        self.assertEqual(lpp_time.reprice([main]), [])
        self.assertNotIn("sim_s_spec", main)
        self.assertAlmostEqual(main["sim_s"], 3.2, places=6)


class Collapse(unittest.TestCase):
    """A run that ends at chance with a finite loss is a dead network: counted as a divergence."""

    def test_chance_level_after_learning_is_collapsed(self):
        self.assertTrue(lpp.collapsed(2.3026, 0.102, 1.731))   # the plateau's LAP U=6 B=256 seed 2
        self.assertTrue(lpp.collapsed(2.30, float("nan"), 1.5))

    def test_a_trained_bad_or_untrained_run_is_not(self):
        self.assertFalse(lpp.collapsed(0.011, 1.0, 0.005))
        self.assertFalse(lpp.collapsed(2.30, 0.35, 1.2))       # loss high but accuracy above twice chance
        self.assertFalse(lpp.collapsed(2.0, 0.15, 1.2))        # below 0.95 ln 10 = 2.187
        self.assertFalse(lpp.collapsed(float("nan"), 0.1, 1.2))  # a NaN is the runtime's divergence, not this
        self.assertFalse(lpp.collapsed(2.33, float("nan"), 2.29))  # never learned: a 3-step smoke run

    def test_alive_prefix_keeps_the_evaluations_before_the_collapse(self):
        self.assertEqual(lpp.alive_prefix([0.5, 0.8, 0.85, 0.1, 0.1, 0.1]), 3)
        self.assertEqual(lpp.alive_prefix([0.1, 0.1]), 0)
        self.assertEqual(lpp.alive_prefix([0.5, 0.1, 0.7, 0.1]), 3)  # the last evaluation above twice chance


if __name__ == "__main__":
    unittest.main()
