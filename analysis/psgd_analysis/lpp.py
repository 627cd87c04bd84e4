"""The LPP-SGD reproduction targets' shared machinery (DESIGN.md section 11: R7, R8, R13 and R7b;
Chatterjee et al., arXiv:2203.06638): the runs of the results files as one dict per run (a
collapsed network counted as a divergence), which stage and alpha0 family a run belongs to,
cells of runs over seeds with their intervals and paired differences, the table formats and
the report assembly on the shared engine. The reports: lpp_table1 (R7, Table 1), lpp_frequency
(R8, Tables 3-4), lpp_table9 (R13, Table 9), lpp_rule (R7b); the plateau protocol's stages:
lpp_plateau; the simulated clock of the plateau reports: lpp_time.

How a verdict is earned (DESIGN.md section 11; psgd_analysis/stats.py): every cell runs
>= 3 seeds (the specs' sweep key "seed"); a claim compares a 95% Student-t interval over
seeds with a threshold fixed before the runs (KEEP_PP in lpp_table1, FLAT_PP and FLAT_FRAC in
lpp_frequency). Differences between two cells are paired by seed (same seed = same initial
model and data order). HOLDS / DOES NOT HOLD only
when the interval decides it, else INCONCLUSIVE. "Flat" / "within" claims are two-sided:
HOLDS when the interval lies inside [-tol, +tol], DOES NOT HOLD when it lies wholly outside.

Our numbers: LeNet-5 on Fashion-MNIST for a few epochs, not ResNet-20 on CIFAR-10 for
300 epochs: absolute values do not compare, the claim checked is the shape (ordering).
  Tr.L.        mean of the logged per-step training losses over the last 5% of the run.
  Tr.A.        accuracy of the final model on the first metrics.train_eval_samples (1000)
               training samples.
  Te.L./Te.A.  the final (averaged) model on the 10k test images.
  wall s       this machine's time (2 cores); in simulated mode the wall time is that of a
               sequential simulation and is not a throughput figure (shown in brackets).
  sim s        simulated time from the cost model (sim/clock.h; the specs' clock block).
  Te.A.@T*     test accuracy at the equal simulated-time budget T* (the mean finish time of
               the fastest synchronous or simulated-mode cell), linearly interpolated between
               the runs' intermediate test evaluations (spec key eval_every). Real-mode runs
               are left out: their updater threads run ahead of the runner's steps, so an
               intermediate evaluation is not tied to a point in time.
"""
import math

import numpy as np
import pandas as pd

from . import results as _results
from . import stats as st
from .report import Report, table_claims
from .tables import is_nan, records

METHOD = {"sync_sgd": "MB-SGD", "post_local_sgd": "PL-SGD", "local_sgd": "L-SGD",
          "lap_sgd": "LAP-SGD", "lpp_sgd": "LPP-SGD"}
ASYNC = ("LAP-SGD", "LPP-SGD")


def _sched(cfg):
    s = cfg.get("schedule")
    return s if isinstance(s, dict) else {"name": s}


def load_runs(paths):
    """One dict per run of all the files (psgd_analysis.load concatenates them), in file
    and sweep order; the per-worker diagnostics come from the run's workers/ group."""
    res = _results.load(paths)
    runs = []
    for r in records(res.runs):
        if r["status"] == "interrupted":  # a run cut off by a signal: no result (--resume reruns it)
            continue
        raw = res.run(r["run_id"])
        cfg = r["config"]
        alg = cfg["algorithm"] if isinstance(cfg["algorithm"], dict) else {"name": cfg["algorithm"]}
        c = res.curve(r["run_id"])
        tl = c["train_loss"].to_numpy(dtype=float)
        k = max(1, int(round(0.05 * len(tl))))
        workers = raw.get("workers", {})
        if "test_accuracy" not in c:  # a run that diverged before its first evaluation
            c = c.assign(test_accuracy=np.nan)
        ev = c[np.isfinite(c["test_accuracy"].to_numpy(dtype=float))]
        runs.append({
            "file": r["file"], "id": raw["id"], "status": r["status"], "seed": int(cfg.get("seed", 1)),
            "method": METHOD.get(alg["name"], alg["name"]), "algo": alg["name"], "opt": _opt(cfg),
            "U": int(alg.get("updaters", 1)), "B": int(cfg["batch_size"]), "lr": float(cfg["lr"]),
            "sched": _sched(cfg).get("name"), "epochs": cfg.get("epochs"), "config": cfg,
            "mode": alg.get("mode", "sync"), "H": alg.get("H"), "switch_at": alg.get("switch_at"),
            "train_loss": float(np.nanmean(tl[-k:])) if len(tl) else float("nan"),
            "test_loss": _num(r["final_test_loss"]), "test_acc": _num(r["final_test_accuracy"]),
            "train_acc": _num(r.get("final_train_accuracy", float("nan"))),
            "val_acc": _num(r.get("final_val_accuracy", float("nan"))),
            "wall_s": _num(r["wall_s"]), "sim_s": _num(r["sim_s"]), "curves": c,
            "ev_sim": ev["sim_s"].to_numpy(dtype=float), "ev_acc": ev["test_accuracy"].to_numpy(dtype=float),
            "ev_epoch": ev["epoch"].to_numpy(dtype=float) if "epoch" in ev else np.full(len(ev), np.nan),
            "staleness": float(np.mean(workers.get("staleness_mean", [np.nan]))),
            "rounds": float(np.ravel(workers.get("averaging_rounds", [np.nan]))[0]),
        })
        if r["status"] == "completed" and collapsed(runs[-1]["train_loss"], runs[-1]["train_acc"],
                                                     float(np.nanmin(tl)) if np.isfinite(tl).any() else float("nan")):
            # a dead network that stayed finite: the max_loss guard's case without the blow-up
            x = runs[-1]
            keep = alive_prefix(x["ev_acc"])
            x.update({"status": "diverged", "ev_sim": x["ev_sim"][:keep], "ev_acc": x["ev_acc"][:keep],
                      "ev_epoch": x["ev_epoch"][:keep],
                      "error": "collapsed to chance: training loss down to {:.3f}, then {:.4f} at the end (>= {:.2f} "
                               "ln 10), training accuracy {:.3f}".format(float(np.nanmin(tl)), x["train_loss"],
                                                                         COLLAPSE_LOSS_FRAC, x["train_acc"])})
            r = dict(r, status="diverged")
        if r["status"] == "diverged":  # its last evaluation came before the blow-up: not a final result
            runs[-1].update({"test_acc": float("nan"), "train_acc": float("nan"), "test_loss": float("nan"),
                             "val_acc": float("nan"), "error": runs[-1].get("error") or r.get("error", "")})
    return runs, res


#: A completed run that learned (its logged training loss fell below LEARNED_LOSS_FRAC x chance, ln 10 for
#: Fashion-MNIST's 10 classes) and then ended within 5% of chance with a training accuracy at most twice
#: chance is a collapsed network: it is counted as the max_loss guard counts a blow-up (a divergence, its
#: accuracies out of the means). LAP-SGD U = 6 at B_loc 256 seed 2 of the plateau runs did so: its loss
#: fell to 1.73 by epoch 1.0, rose past 2.2 by epoch 1.23 (warmup) and ended at 2.3026, accuracy 0.102,
#: a collapse the guard could not see. A run that never learned (a 3-step smoke run) is not collapsed.
COLLAPSE_LOSS_FRAC = 0.95
LEARNED_LOSS_FRAC = 0.9
CLASSES = 10


def collapsed(train_loss, train_acc, min_train_loss, classes=CLASSES):
    """Did the run learn and then end at chance (see COLLAPSE_LOSS_FRAC)?"""
    chance = math.log(classes)
    if not np.isfinite(train_loss) or train_loss < COLLAPSE_LOSS_FRAC * chance:
        return False
    if not np.isfinite(min_train_loss) or min_train_loss >= LEARNED_LOSS_FRAC * chance:
        return False
    return not np.isfinite(train_acc) or train_acc <= 2.0 / classes


def alive_prefix(acc, classes=CLASSES):
    """How many leading evaluations to keep of a collapsed run: up to its last one above twice chance
    that the collapse (every later evaluation at most twice chance) follows."""
    acc = np.asarray(acc, dtype=float)
    above = np.nonzero(acc > 2.0 / classes)[0]
    return int(above[-1]) + 1 if len(above) else 0


def _opt(cfg):
    o = cfg.get("optimizer", "sgd")
    return o.get("name", "sgd") if isinstance(o, dict) else str(o)


def _num(x):
    return float("nan") if x is None or is_nan(x) else float(x)


def acc_at(r, t):
    """Test accuracy of run r at simulated time t: linear interpolation between its test
    evaluations; NaN before the first one, the final accuracy once the run has finished."""
    x, y = r["ev_sim"], r["ev_acc"]
    if not len(x) or not np.isfinite(t) or t < x[0]:
        return float("nan")
    if r["status"] == "diverged" and t > x[-1]:  # after the blow-up there is no model to evaluate
        return float("nan")
    return float(np.interp(t, x, y))


class Cell:
    """The runs of one configuration over seeds."""

    def __init__(self, key, label, runs):
        self.key, self.label, self.runs = key, label, sorted(runs, key=lambda r: r["seed"])
        self.by_seed = {r["seed"]: r for r in self.runs}

    @property
    def n(self):
        return len(self.runs)

    def v(self, k):
        return [r[k] for r in self.runs]

    @property
    def diverged(self):
        return [r for r in self.runs if r["status"] == "diverged"]

    @property
    def n_txt(self):
        """The runs of the cell, and how many of them diverged (their accuracies are not in the means,
        intervals or paired differences: a blown-up run has no final model)."""
        d = len(self.diverged)
        return "{} ({} diverged)".format(self.n, d) if d else str(self.n)

    #: the bounds of a quantity (accuracies are fractions): intervals are clipped to them
    BOUNDS = {"test_acc": (0.0, 1.0), "train_acc": (0.0, 1.0), "test_loss": (0.0, np.inf),
              "train_loss": (0.0, np.inf), "sim_s": (0.0, np.inf), "wall_s": (0.0, np.inf)}

    def ci(self, k):
        return st.mean_interval(self.v(k), self.BOUNDS.get(k))

    def mean(self, k):
        v = [x for x in self.v(k) if x is not None and np.isfinite(x)]
        return float(np.mean(v)) if v else float("nan")

    def __getattr__(self, name):  # method, U, B, mode, ... from the first run
        if name in ("runs", "by_seed"):
            raise AttributeError(name)
        return self.runs[0][name]


def paired(a, b, fa, fb=None, rel=False):
    """Interval of fa(a's run) - fb(b's run) over the seeds both cells ran (relative to
    fb(b) when rel)."""
    fb = fb or fa
    d = []
    for s in sorted(set(a.by_seed) & set(b.by_seed)):
        x, y = fa(a.by_seed[s]), fb(b.by_seed[s])
        d.append((x - y) / y if rel else x - y)
    return st.t_interval(d)


def mb_pl_lose(mb_big, mb, pl_big, pl):
    """'MB-SGD and PL-SGD lose test accuracy at the large batch' (Tables 1 and 9): both paired
    differences below 0. Returns (ours: the two intervals in points, verdict)."""
    acc = (lambda r: r["test_acc"])
    dm, dp = paired(mb_big, mb, acc), paired(pl_big, pl, acc)
    v = st.combine([st.decide(dm[1], dm[2], 0.0, "below"), st.decide(dp[1], dp[2], 0.0, "below")])
    return "MB {} points, PL {} points".format(pp(dm), pp(dp)), v


def within(ci, tol):
    """Two-sided 'the difference is within +-tol': HOLDS when the interval lies inside."""
    m, lo, hi, n = ci
    return st.combine([st.decide(lo, hi, tol, "below"), st.decide(lo, hi, -tol, "above")])


def pp(ci, spec="+.2f"):
    """An accuracy difference interval in points."""
    return st.fmt_ci(*ci[:3], spec, 100)


def diverged_lines(cells):
    """The diverged runs of these cells, one line each (the tables' n column counts them)."""
    div = [(c, r) for c in cells for r in c.diverged]
    if not div:
        return []
    return ["Diverged runs (training loss NaN or above the spec's max_loss, or collapsed: after learning, a final training loss within 5% of chance and a training accuracy at most twice chance; not in the means, intervals or paired "
            "differences: a cell's interval then covers its surviving seeds only): " + "; ".join(
                "{} seed {}: {}".format(c.label, r["seed"], r.get("error") or "diverged") for c, r in div) + "\n"]


def acc_ci(cell, k="test_acc"):
    return st.fmt_ci(*cell.ci(k)[:3], ".2f", 100)


def seeds_line(cells):
    ns = sorted({c.n for c in cells})
    seeds = sorted({s for c in cells for s in c.by_seed})
    return ("Seeds {} ({} per cell). Statistics: {}; differences between cells paired by seed. "
            "Verdicts: HOLDS / DOES NOT HOLD only when the interval decides against the threshold fixed "
            "before the runs, else INCONCLUSIVE.".format(
                ", ".join(map(str, seeds)) or "-", "n = " + "/".join(map(str, ns)) if ns else "none",
                st.METHOD))


def runtime_record(runs):
    """The measured runtime: the sum of the runs' wall times in the results files."""
    tot = sum(r["wall_s"] for r in runs if np.isfinite(r["wall_s"]))
    how = ("one rank at nice 19 on a shared machine: includes the time spent waiting for a core"
           if is_plateau(runs) else "mpirun -n 2")
    return {"experiment": "{:.1f} min ({} runs, sum of run wall times, {})".format(tot / 60, len(runs), how)}


def to_report(target, title, L, cells, runs, paths, df, fig):
    """The report of L (the Markdown body, its first line the title) on the shared engine:
    the claims are the body's verdict rows (table_claims), the seeds the smallest per-cell count."""
    rep = Report(target, title)
    rep.inputs = list(paths)
    rep.runtime = runtime_record(runs)
    rep.seeds = min((c.n for c in cells), default=0) or None
    for c in table_claims(L):
        rep.claim_verdict(c["claim"], c["verdict"], "see the table of claims below")
    rep.text("\n".join(L[1:]))
    rep.data(df)
    rep.figure(fig)
    return rep


def log_scale_if_drawn(ax):
    """A log y axis, unless nothing positive was drawn (a smoke run or all-diverged cells draw nothing, and
    matplotlib refuses a log axis without data)."""
    if any(np.any(np.asarray(ln.get_ydata(), dtype=float) > 0) for ln in ax.get_lines()):
        ax.set_yscale("log")


def loss_band(ax, c, color, ls):
    """Training loss vs epoch of one cell: the seeds' moving mean (window n/50) as a line,
    their min..max as a band (both figures). Diverged runs (a collapse included) are left out, as from
    the means of the tables: one run at chance drew the whole cell's mean and band to ln 10."""
    runs = [r for r in c.runs if r["status"] != "diverged"]
    if not runs:
        return
    n = min(len(r["curves"]) for r in runs)
    if n < 2:
        return
    tl = np.array([np.asarray(r["curves"]["train_loss"], dtype=float)[:n] for r in runs])
    ep = np.asarray(runs[0]["curves"]["epoch"], dtype=float)[:n]
    k = max(1, n // 50)
    sm = np.array([np.convolve(t, np.ones(k) / k, mode="valid") for t in tl])
    ax.plot(ep[k - 1:], sm.mean(0), color=color, lw=1, ls=ls, label=c.label)
    ax.fill_between(ep[k - 1:], sm.min(0), sm.max(0), color=color, alpha=0.15)

def f(x, fmt="{:.3f}"):
    return "-" if x is None or (isinstance(x, float) and not np.isfinite(x)) else fmt.format(x)


def cells_frame(cells, extra=()):
    cols = ["cell", "method", "U", "B", "mode", "lr", "schedule", "H", "switch_at", "n_seeds"]
    qs = ["test_acc", "train_acc", "test_loss", "train_loss", "sim_s", "wall_s", "staleness", "rounds"]
    for q in qs + [e[0] for e in extra]:
        cols += [q + "_mean", q + "_lo", q + "_hi"]
    rows = []
    for c in cells:
        row = [c.label, c.method, c.U, c.B, c.mode, c.lr, c.sched, c.H, c.switch_at, c.n]
        for q in qs:
            row += list(c.ci(q)[:3])
        for _, fn in extra:
            row += list(st.t_interval([fn(c, r) for r in c.runs])[:3])
        rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def runtime_line(runs):
    tot = sum(r["wall_s"] for r in runs if np.isfinite(r["wall_s"]))
    return "Compute: {:.1f} min (sum of the {} runs' wall times on this machine).".format(tot / 60, len(runs))


def group(runs, keyf, labelf):
    cells, order = {}, []
    for r in runs:
        k = keyf(r)
        if k is None:
            continue
        if k not in cells:
            cells[k] = []
            order.append(k)
        cells[k].append(r)
    return [Cell(k, labelf(cells[k][0]), cells[k]) for k in order]


#: the plateau protocol's stages (lpp_plateau) and its time runs (lpp_time), by their results files
PROBE, SELECT, TIME = "lpp_plateau_probe", "lpp_plateau_select", "lpp_plateau_time"
FAMILY = {"sync_sgd": "DP", "post_local_sgd": "DP", "lap_sgd": "LAP", "lpp_sgd": "LPP"}
#: B_loc at and above which MB-SGD/PL-SGD form their own alpha0 family (scripts/lpp_plateau_specs.py GRID_1024:
#: the B_loc 128 choice, scaled x B/128, need not carry to the large batch)
LARGE_B = 1024


def family(r):
    """The run's alpha0 family: DP (MB-SGD/PL-SGD), DP1024 (the same at B_loc >= LARGE_B), LAP, LPP;
    MB-SGD/PL-SGD with LARS are LARS (LARS1024 at B_loc >= LARGE_B): its per-tensor step does not
    share plain SGD's LR scale."""
    fam = FAMILY.get(r["algo"], r["algo"])
    if fam == "DP" and r.get("opt") == "lars":
        fam = "LARS"
    return fam + str(LARGE_B) if fam in ("DP", "LARS") and int(r.get("B", 0)) >= LARGE_B else fam


def role(r):
    """'probe', 'select' or 'main' (the run's results file)."""
    f = r["file"]
    return ("probe" if f.startswith(PROBE) else "select" if f.startswith(SELECT) else "time" if f.startswith(TIME)
            else "main")


def is_plateau(runs):
    return any("plateau" in r["file"] for r in runs)


def alpha0(r):
    """The run's initial LR alpha0 (Table 13's underline-alpha): warmup_scaled starts at lr;
    cosine starts at lr x warmup_start_factor (lr is the warmed-up peak)."""
    s = _sched(r["config"])
    if s.get("name") == "cosine" and s.get("warmup_epochs", 0) > 0:
        return r["lr"] * float(s.get("warmup_start_factor", 0.0))
    return r["lr"]


def not_tested(verdict, why):
    """A claim's verdict, or NOT TESTED (why) when a protocol check failed."""
    return "{} ({}; the data alone: {})".format(st.NOT_TESTED, why, verdict) if why else verdict


def _is_abl(r):
    return "ablation" in r["file"]
