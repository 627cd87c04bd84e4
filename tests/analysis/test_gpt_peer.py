#!/usr/bin/python3
"""psgd_analysis.gpt_peer on made-up inputs: the Welch interval against scipy's Welch test, the
2% goal where it must hold, where it must fail and where the data cannot decide, the token check,
and the files (a results file written here with h5py, peer JSON records as
bench/torch_gpt_train.py --out writes them), bad input included.
Run: /usr/bin/python3 -m unittest tests/analysis/test_gpt_peer.py -v
"""
import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest

import h5py
import numpy as np
from scipy import stats as sps

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import gpt_peer as gp  # noqa: E402
from psgd_analysis import stats as st  # noqa: E402

TOK = 2000 * 12 * 64


def ours(arm, vals, workers=1, tokens=TOK):
    return [{"arm": arm, "workers": workers, "seed": i + 1, "status": "completed", "tokens": tokens,
             "val_loss": v} for i, v in enumerate(vals)]


def peer(vals, tokens=TOK):
    return [{"file": f"p{i}.json", "seed": i + 1, "step": 2000, "tokens": tokens, "val_loss": v,
             "peer": "torch 2.1"} for i, v in enumerate(vals)]


class Welch(unittest.TestCase):
    def test_against_scipy(self):
        a, b = [1.61, 1.64, 1.60, 1.66], [1.58, 1.59, 1.57]
        d, lo, hi, df = gp.welch_interval(a, b)
        self.assertAlmostEqual(d, np.mean(a) - np.mean(b), places=12)
        # Welch-Satterthwaite by hand
        va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 3
        self.assertAlmostEqual(df, (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 2), places=10)
        # the interval's half-width is t_{0.975, df} x se, and it excludes 0 exactly when scipy's
        # Welch test rejects at 5% (the interval is that test inverted)
        se = math.sqrt(va + vb)
        self.assertAlmostEqual((hi - lo) / 2, sps.t.ppf(0.975, df) * se, places=10)
        for shift in (0.0, 0.01, 0.03, 0.06):
            bb = [x + shift for x in b]
            d, lo, hi, _ = gp.welch_interval(a, bb)
            p = sps.ttest_ind(a, bb, equal_var=False).pvalue
            self.assertEqual(lo > 0 or hi < 0, p < 0.05, (shift, lo, hi, p))

    def test_degenerate(self):
        self.assertTrue(math.isnan(gp.welch_interval([1.0], [1.0, 2.0])[1]))
        self.assertTrue(math.isnan(gp.welch_interval([], [1.0, 2.0])[0]))
        d, lo, hi, _ = gp.welch_interval([2.0, 2.0], [1.0, 1.0])
        self.assertEqual((d, lo, hi), (1.0, 1.0, 1.0))


class Goal(unittest.TestCase):
    def test_decide_within(self):
        self.assertEqual(gp.decide_within(-1.0, 1.5), st.HOLDS)
        self.assertEqual(gp.decide_within(2.5, 4.0), st.FAILS)
        self.assertEqual(gp.decide_within(-6.0, -2.1), st.FAILS)
        self.assertEqual(gp.decide_within(1.0, 3.0), st.INCONCLUSIVE)
        self.assertEqual(gp.decide_within(math.nan, 1.0), st.INCONCLUSIVE)

    def test_table(self):
        py = [1.600, 1.605, 1.595]
        cases = {
            "near": ([1.604, 1.606, 1.603], st.HOLDS),          # +0.25%, tight
            "worse": ([1.700, 1.702, 1.698], st.FAILS),         # +6.25%
            "better": ([1.50, 1.51, 1.49], st.FAILS),            # -6.25%: the goal is two-sided
            "noisy": ([1.55, 1.70, 1.62], st.INCONCLUSIVE),      # mean +1.5%, spread too wide
        }
        for name, (vals, want) in cases.items():
            t = gp.table(ours("W=1 sync_sgd (average)", vals), peer(py))
            r = t["rows"][0]
            self.assertEqual(r["verdict"], want, (name, r))
            self.assertAlmostEqual(r["rel_pct"], 100 * (np.mean(vals) - np.mean(py)) / np.mean(py))
            self.assertAlmostEqual(r["bpc"], np.mean(vals) / math.log(2))
            m, lo, hi, n = st.t_interval(vals)
            self.assertEqual((r["mean"], r["lo"], r["hi"], r["n"]), (m, lo, hi, 3))
            self.assertIn(want, t["markdown"])
        # the W = 8 arms are compared, not judged; other tokens are not compared
        rows = (ours("W=1 sync_sgd (average)", [1.6, 1.61, 1.6])
                + ours("W=8 local_sgd H=50", [1.7, 1.71, 1.69], workers=8)
                + ours("W=1 short", [1.9, 1.9, 1.91], tokens=TOK // 2))
        t = gp.table(rows, peer(py))
        by = {r["arm"]: r for r in t["rows"]}
        self.assertEqual(by["W=8 local_sgd H=50"]["verdict"], "(not the goal's arm)")
        self.assertTrue(by["W=1 short"]["verdict"].startswith(st.NOT_TESTED))
        self.assertGreater(by["W=8 local_sgd H=50"]["diff_lo"], 0)
        # a failed seed is counted, not averaged in
        rows = ours("W=1 sync_sgd (average)", [1.6, math.nan, 1.61])
        r = gp.table(rows, peer(py))["rows"][0]
        self.assertEqual((r["n"], r["failed"]), (2, 1))


def write_ours(path, runs):
    with h5py.File(path, "w") as f:
        for i, (workers, alg, seed, loss, status) in enumerate(runs):
            g = f.create_group(f"runs/run{i}")
            cfg = {"model": {"name": "gpt", "block": 64}, "workers": workers, "batch_size": 12,
                   "algorithm": alg, "seed": seed, "lr": 0.001}
            steps = 2000 // workers
            g.attrs["config_json"] = json.dumps(cfg)
            g.attrs["status"] = status
            g.attrs["wall_s"] = 1.0
            g.attrs["sim_s"] = 1.0
            g.attrs["index"] = i
            g.attrs["summary_json"] = json.dumps({"steps": steps, "samples": steps * workers * 12,
                                                  "final_test_loss": loss, "index": i})
            g.create_dataset("curves/step", data=np.arange(1, 3))


class Files(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def peer_file(self, seed, loss, name=None, step=2000):
        p = os.path.join(self.d, name or f"peer_{seed}.json")
        with open(p, "w") as f:
            json.dump({"peer": "torch 2.1", "seed": seed, "evals": [
                {"step": 1000, "val_loss": loss + 0.2, "tokens": 1000 * 12 * 64},
                {"step": step, "val_loss": loss, "tokens": step * 12 * 64}]}, f)
        return p

    def run_main(self, args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = gp.main(["gpt_peer", *args])
        return rc, out.getvalue(), err.getvalue()

    def test_end_to_end(self):
        h5 = os.path.join(self.d, "gpt_kjv.h5")
        sync = {"name": "sync_sgd", "combine": "average"}
        local = {"name": "local_sgd", "H": 50}
        write_ours(h5, [(1, sync, s, 1.60 + 0.002 * s, "completed") for s in (1, 2, 3)]
                   + [(8, local, s, 1.75, "completed") for s in (1, 2)]
                   + [(8, local, 3, None, "diverged")])
        rows = gp.read_ours(h5)
        self.assertEqual({r["arm"] for r in rows}, {"W=1 sync_sgd (average)", "W=8 local_sgd H=50"})
        self.assertEqual({r["tokens"] for r in rows}, {TOK})  # samples x block (no tokens key)
        peers = [self.peer_file(s, 1.602 + 0.002 * s) for s in (1, 2, 3)]
        rc, out, err = self.run_main([h5, *peers])
        self.assertEqual(rc, 0, err)
        self.assertIn("| W=1 sync_sgd (average) | 3 (0) |", out)
        self.assertIn("| W=8 local_sgd H=50 | 2 (1) |", out)
        self.assertIn(st.HOLDS, out)
        self.assertIn("PyTorch peer (torch 2.1)", out)

    def test_bad_input(self):
        h5 = os.path.join(self.d, "o.h5")
        write_ours(h5, [(1, "sync_sgd", 1, 1.6, "completed")])
        bad = os.path.join(self.d, "bad.json")
        with open(bad, "w") as f:
            f.write('{"seed": 1, "evals": []}')
        rc, out, err = self.run_main([h5, bad])
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("bad.json", err)
        a = self.peer_file(1, 1.6, "a.json")
        b = self.peer_file(1, 1.61, "b.json")
        rc, out, err = self.run_main([h5, a, b])
        self.assertEqual(rc, 2)
        self.assertIn("seed 1 given twice", err)
        c = self.peer_file(2, 1.61, "c.json", step=1500)
        rc, out, err = self.run_main([h5, a, c])
        self.assertEqual(rc, 2)
        self.assertIn("different steps", err)
        rc, out, err = self.run_main([os.path.join(self.d, "missing.h5"), a])
        self.assertEqual(rc, 2)
        self.assertIn("missing.h5", err)


if __name__ == "__main__":
    unittest.main()
