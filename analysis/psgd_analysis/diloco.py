"""R14: DiLoCo (Douillard et al., arXiv:2311.08105) on the workbench's char-level GPT, scaled to
two cores: its main comparison (section 3, Table 2, Figure 2) and its ablations (section 3.1:
Figure 4 the number of inner steps H, Figure 5 i.i.d. vs non-i.i.d. shards, Figure 6 the outer
optimizer, Table 3 the number of replicas).

Six specs (experiments/diloco/): diloco_lm_main (DiLoCo W = 8 at H = 50 on non-i.i.d. shards,
synchronous data parallelism at W = 8, the single-worker baseline at the same steps),
diloco_lm_updates (the single worker at 8x the steps: Table 2's '8x updates'), diloco_lm_h (H = 25, 100, 200), diloco_lm_outer (outer SGD lr 1 = FedAvg, outer Adam),
diloco_lm_iid (i.i.d. shards) and diloco_lm_replicas (W = 2, 4). Every claim compares final
validation losses (nats per character on the last 10% of the text) paired by seed; the rules
below are fixed before the runs and tested on made-up numbers in tests/analysis/test_diloco.py.
"""
from __future__ import annotations

import math
import os
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import stats as st
from .report import Report
from .results import load

MAIN, UPD, HSPEC, OUTER, IID, REPL = ("diloco_lm_main", "diloco_lm_updates", "diloco_lm_h", "diloco_lm_outer",
                                      "diloco_lm_iid", "diloco_lm_replicas")
#: section 3.1: "we would expect the non-i.i.d. setting to yield worse performance [...] but DiLoCo
#: exhibits very strong robustness"; Figure 5 gives no number for "comparable", so the margin is
#: ours: per-character perplexities within 1% of each other
IID_MARGIN = 0.01
#: section 3.1 (Figure 4): "when H = 1000 the perplexity increases by only 2.9% relative to H = 50,
#: despite communicating 20x less"
MILD_PAPER = 0.029
LOSS_BOUNDS = (-math.inf, math.inf)

# The claims, each with the paper's words in the catalog's protocol table; a catalog Rule matches
# a substring of these texts. The report engine finds a claim's evidence line by its first 60
# characters, so no two claims share them.
C_DP = ("Table 2: DiLoCo (W = 8, H = {H}) reaches a lower perplexity than data-parallel training with an 8x "
        "batch at the same steps, compute and data (paper: 15.02 vs 15.30)")
C_8X = ("Table 2 / section 5: the baseline with 8x the updates (W = 1, 8x the steps, the same data) reaches a "
        "lower perplexity than DiLoCo (paper: 14.72 vs 15.02)")
C_BASE = ("Table 2: DiLoCo beats the single-worker baseline: W = 8, H = {H} reaches a lower perplexity than W = 1 "
          "at the same steps (paper: 15.02 vs 16.23)")
C_BYTES = ("Table 2: DiLoCo sends H times fewer bytes per worker than data-parallel training (paper: 8 x N/H "
           "vs 8 x N)")
C_H_END = "Figure 4: communicating more often lowers the perplexity (H = {lo} below H = {hi})"
C_H_EVERY = "Figure 4: the perplexity rises at every doubling of H ({hs})"
C_H_MILD = ("Figure 4: the perplexity rises only mildly with {r:g}x less communication (H = {hi} vs {lo}: "
            "below the paper's +2.9% at 20x)")
C_SGD = ("Figure 6: outer SGD with lr 1 (FedAvg) ends with a higher perplexity than outer Nesterov (lr 0.7, "
         "momentum 0.9)")
C_ADAM = "Figure 6: outer Adam ends with a higher perplexity than outer Nesterov"
C_IID_EARLY = ("Figure 5: DiLoCo converges faster on i.i.d. shards early on (lower perplexity at {f:g}% of "
               "the steps)")
C_IID_SHRINK = "Figure 5: the non-i.i.d. penalty shrinks from {f:g}% of the steps to the end"
C_IID_END = ("Figure 5: i.i.d. and non-i.i.d. shards attain comparable perplexity at the end (per-character "
             "perplexities within 1%)")
C_REPL = ("Table 3: more replicas lower the perplexity at the same inner steps per replica (W = {ws}, "
          "non-i.i.d. shards)")


# ------------------------------------------------------------------------------- the rules
def paired_diffs(lower: Mapping[int, float], higher: Mapping[int, float]) -> list[float]:
    """Per seed (both arms present), the loss of the arm claimed higher minus the arm claimed
    lower: positive = the claim's direction. A diverged run's loss is +inf, so the difference is
    +inf when only the 'higher' arm diverged, -inf when only the 'lower' one did; both: NaN,
    dropped."""
    out = []
    for s in sorted(set(lower) & set(higher)):
        a, b = float(lower[s]), float(higher[s])
        d = b - a if not (math.isinf(a) and math.isinf(b)) else math.nan
        if not math.isnan(d):
            out.append(d)
    return out


def lower_claim(diffs: Sequence[float]) -> tuple[str, float, str]:
    """'This arm ends lower': per-seed differences (paired_diffs) above 0. Without a diverged run
    the mean's interval (stats.decide_mean; Student-t below 10 seeds) decides it, and the
    t-test's one-sided p-value against the claim goes to Holm when cells are combined. With one,
    the per-seed outcomes go to the exact sign test (stats.decide_exact: INCONCLUSIVE below 6
    seeds). Returns (verdict, p against, text in nats per character)."""
    x = [float(v) for v in diffs if not math.isnan(v)]
    inf = sum(1 for v in x if math.isinf(v))
    if not inf:
        v, ci = st.decide_mean(x, 0.0, "above", LOSS_BOUNDS)
        p = st.t_pvalues(x, 0.0)[1]
        flag = " (constant across seeds: not decided)" if st.is_constant(x) else ""
        return v, p, f"{st.fmt_ci(*ci[:3], '+.4f')} nats/char (n = {ci[3]}){flag}"
    k = sum(1 for v in x if v > 0)
    return st.decide_exact(k, len(x)), st.binom_less(k, len(x)), (
        f"{inf} of {len(x)} pairs with a diverged run; {k} of {len(x)} in the claimed direction, exact sign "
        f"test p = {st.sign_test(k, len(x)):.3g}")


def every_cell(cells: Mapping[str, Sequence[float]]) -> tuple[str, str]:
    """A claim that must hold in every cell (e.g. every doubling of H): HOLDS when each cell's
    lower_claim holds (intersection-union), DOES NOT HOLD when Holm over the cells' p-values
    against the claim rejects one at family-wise 5%, else INCONCLUSIVE."""
    if not cells:
        return st.INCONCLUSIVE, "no cell"
    dec = {c: lower_claim(v) for c, v in cells.items()}
    if all(d[0] == st.HOLDS for d in dec.values()):
        v = st.HOLDS
    else:
        v = st.FAILS if any(st.holm([d[1] for d in dec.values()])) else st.INCONCLUSIVE
    return v, "; ".join(f"{c}: {d[2]}" for c, d in dec.items())


def rel_ppl(diffs: Sequence[float]) -> list[float]:
    """Per-character perplexity ratio minus 1 of a loss difference (exp(d) - 1)."""
    return [math.expm1(d) for d in diffs if np.isfinite(d)]


def mild_claim(diffs: Sequence[float], threshold: float = MILD_PAPER) -> tuple[str, str]:
    """'The perplexity rises by less than ``threshold``' (relative): the per-seed exp(d) - 1 of
    the loss differences, its interval below the threshold."""
    r = rel_ppl(diffs)
    v, ci = st.decide_mean(r, threshold, "below", (-1.0, math.inf))
    return v, f"{st.fmt_ci(*ci[:3], '+.2%')} (n = {ci[3]})"


def within_claim(diffs: Sequence[float], margin: float = IID_MARGIN) -> tuple[str, str]:
    """Equivalence of two arms (per-seed loss differences): HOLDS when the 90% Student-t interval
    of exp(d) - 1 lies inside [-margin, margin] (two one-sided tests at 5%, TOST), DOES NOT HOLD
    when the 95% interval lies wholly outside it, else INCONCLUSIVE."""
    r = rel_ppl(diffs)
    if len(r) < 2 or st.is_constant(r):
        return st.INCONCLUSIVE, f"n = {len(r)}"
    m, lo90, hi90, n = st.t_interval(r, 0.90)
    _, lo, hi, _ = st.t_interval(r, 0.95)
    if -margin < lo90 and hi90 < margin:
        v = st.HOLDS
    elif lo > margin or hi < -margin:
        v = st.FAILS
    else:
        v = st.INCONCLUSIVE
    return v, (f"{100 * m:+.2f}% [95%: {100 * lo:+.2f}%, {100 * hi:+.2f}%; 90%: {100 * lo90:+.2f}%, "
               f"{100 * hi90:+.2f}%] (n = {n}; margin +-{100 * margin:g}%)")


def shrink_claim(gap_early: Mapping[int, float], gap_end: Mapping[int, float]) -> tuple[str, float, str]:
    """'The gap shrinks': per seed the early gap minus the final gap (each non-i.i.d. minus
    i.i.d. loss) above 0 (lower_claim on paired_diffs(end, early))."""
    return lower_claim(paired_diffs(gap_end, gap_early))


def bytes_ratio(dp_bytes: Mapping[int, float], diloco_bytes: Mapping[int, float]) -> list[float]:
    """Per seed, data parallelism's bytes sent per worker over DiLoCo's."""
    return [dp_bytes[s] / diloco_bytes[s] for s in sorted(set(dp_bytes) & set(diloco_bytes))
            if diloco_bytes[s] > 0]


# --------------------------------------------------------------------- reading the files
def _alg(cfg: Mapping) -> dict:
    a = cfg.get("algorithm", {})
    return a if isinstance(a, dict) else {"name": a}


def _part(cfg: Mapping) -> str:
    p = cfg.get("partition", "iid")
    return p.get("name", "iid") if isinstance(p, dict) else str(p)


def arm_of(cfg: Mapping) -> tuple:
    """(kind, W, steps, H, outer, outer_lr, partition) of a run's config; kind 'diloco' or 'sync'."""
    a = _alg(cfg)
    W, steps = int(cfg.get("workers", 1)), int(cfg.get("steps", 0))
    if a.get("name") == "diloco":
        return ("diloco", W, steps, int(a.get("sync_every", 500)), str(a.get("outer", "nesterov")),
                float(a.get("outer_lr", 0.7)), _part(cfg))
    return ("sync", W, steps, 1, "-", math.nan, _part(cfg))


def label(arm: tuple) -> str:
    kind, W, steps, H, outer, olr, part = arm
    shards = "non-i.i.d." if part == "contiguous" else "i.i.d."
    if kind == "diloco":
        return f"DiLoCo W = {W}, H = {H}, outer {outer} lr {olr:g}, {shards}"
    return f"{'data parallel' if W > 1 else 'single worker'} W = {W}, {steps} steps"


def collect(paths: Sequence[str]) -> pd.DataFrame:
    """One row per run of every file: its arm, seed, status, final and first-evaluation
    validation loss (+inf for a diverged run), bytes sent per worker, tokens, wall time."""
    rows = []
    for p in paths:
        res = load([p])
        for _, r in res.runs.iterrows():
            arm = arm_of(r["config"])
            c = res.curve(r["run_id"])
            ev = c.dropna(subset=["test_loss"]) if "test_loss" in c else c.iloc[0:0]
            bad = r["status"] != "completed" or not np.isfinite(float(r.get("final_test_loss", math.nan)))
            first = ev.iloc[0] if len(ev) else None
            rows.append({"spec": os.path.basename(p)[:-3], "arm": label(arm), "kind": arm[0], "workers": arm[1],
                         "steps": arm[2], "H": arm[3], "outer": arm[4], "outer_lr": arm[5], "partition": arm[6],
                         "seed": int(r["seed"]), "status": r["status"],
                         "final_val_loss": math.inf if bad else float(r["final_test_loss"]),
                         "first_eval_step": int(first["step"]) if first is not None else -1,
                         "first_val_loss": float(first["test_loss"]) if first is not None and not bad else math.inf,
                         "bytes_sent_per_worker": float(r.get("bytes_sent_per_worker", math.nan)),
                         "tokens": float(r.get("tokens", math.nan)), "wall_s": float(r["wall_s"]),
                         "run_id": r["run_id"], "file": p})
    return pd.DataFrame(rows)


def _by_seed(df: pd.DataFrame, col: str = "final_val_loss") -> dict[int, float]:
    return {int(s): float(v) for s, v in zip(df["seed"], df[col])}


def _fmt_loss(vals: Sequence[float]) -> str:
    fin = [v for v in vals if np.isfinite(v)]
    div = len(vals) - len(fin)
    s = st.fmt_ci(*st.mean_interval(fin, (0.0, math.inf))[:3], ".4f")
    return s + (f" ({div} diverged)" if div else "")


def _ppl(vals: Sequence[float]) -> str:
    fin = [v for v in vals if np.isfinite(v)]
    return f"{math.exp(float(np.mean(fin))):.3f}" if fin else "-"


# ------------------------------------------------------------------------------ the report
def report(paths: Sequence[str]) -> Report:
    by = {os.path.basename(p)[:-3]: p for p in paths}
    rep = Report("diloco-lm", "R14: DiLoCo on the char-level GPT (arXiv:2311.08105 Table 2, Figures 4-6, Table 3)")
    rep.inputs = [by[s] for s in (MAIN, UPD, HSPEC, OUTER, IID, REPL) if s in by]
    df = collect(rep.inputs)
    md: list[str] = []
    dil = df[df["kind"] == "diloco"]
    main_d = dil[(dil["spec"] == MAIN)]
    H0 = int(main_d["H"].iloc[0]) if len(main_d) else 0
    T = int(main_d["steps"].iloc[0]) if len(main_d) else 0
    W0 = int(main_d["workers"].iloc[0]) if len(main_d) else 0

    def arm(**kw) -> pd.DataFrame:
        m = df
        for k, v in kw.items():
            m = m[m[k] == v]
        return m

    nest = dict(kind="diloco", outer="nesterov", partition="contiguous", steps=T)
    d0 = arm(spec=MAIN, workers=W0, H=H0, **nest)
    dp = arm(spec=MAIN, kind="sync", workers=W0, steps=T)
    base = arm(spec=MAIN, kind="sync", workers=1, steps=T)
    upd = arm(spec=UPD, kind="sync", workers=1)
    # Table 2's '8x updates' row trains on the same data as the W replicas: W x the steps of one worker
    upd_why = "" if upd.empty or set(upd["steps"]) == {W0 * T} else (
        f"the {UPD} runs have {sorted(set(int(x) for x in upd['steps']))} steps, not W x {T} = {W0 * T}: "
        "not the same data as DiLoCo")

    # ---- Table 2
    md += ["## Table 2: DiLoCo against the synchronous baselines", "",
           "Paper (section 3): 'DiLoCo (last row) doesn't increase training time, communicates H = 500x less than "
           "the second baseline (and is thus amenable to distributed training across compute islands), while also "
           "reaching better generalization. Increasing by 8x the number of updates improves perplexity over our "
           "method, but at the cost of being 8x slower.'", "",
           f"Final validation loss (nats per character, the last 10% of the text), mean [95% interval] over "
           f"seeds ({st.METHOD}); the per-character perplexity exp(loss) of the mean beside the paper's "
           "per-token perplexity (C4, 150M model). Communication: bytes each worker sent, from the runs' "
           "summaries; tokens: characters trained on over all workers.", "",
           "| arm (paper's row) | steps | tokens | bytes sent per worker | val loss | per-char ppl | paper's ppl |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, sub, paper in (("Baseline: " + label(arm_of({"workers": 1, "steps": T})), base, "16.23"),
                             (f"Baseline, {W0}x batch size with data parallelism: data parallel W = {W0}", dp, "15.30"),
                             (f"Baseline, {W0}x updates: single worker, W x the steps", upd, "14.72"),
                             (f"DiLoCo: W = {W0}, H = {H0}, outer Nesterov 0.7 / 0.9, non-i.i.d.", d0, "15.02")):
        if sub.empty:
            continue
        md.append(f"| {name} | {int(sub['steps'].iloc[0])} | {sub['tokens'].mean():,.0f} | "
                  f"{sub['bytes_sent_per_worker'].mean():,.0f} | {_fmt_loss(list(sub['final_val_loss']))} | "
                  f"{_ppl(list(sub['final_val_loss']))} | {paper} |")
    md.append("")
    claims: list[tuple[str, str, str]] = []
    if not d0.empty and not dp.empty:
        v, _, e = lower_claim(paired_diffs(_by_seed(d0), _by_seed(dp)))
        claims.append((C_DP.format(H=H0), f"data parallel minus DiLoCo: {e}", v))
    if not d0.empty and not upd.empty:
        v, _, e = lower_claim(paired_diffs(_by_seed(upd), _by_seed(d0)))
        if upd_why:
            v = f"{st.NOT_TESTED} ({upd_why}; the data alone: {v})"
        claims.append((C_8X, f"DiLoCo minus {W0}x updates: {e}", v))
    if not d0.empty and not base.empty:
        v, _, e = lower_claim(paired_diffs(_by_seed(d0), _by_seed(base)))
        claims.append((C_BASE.format(H=H0), f"baseline minus DiLoCo: {e}", v))
    if not d0.empty and not dp.empty:
        r = bytes_ratio(_by_seed(dp, "bytes_sent_per_worker"), _by_seed(d0, "bytes_sent_per_worker"))
        v, ci = st.decide_mean(r, 1.0, "above")
        claims.append((C_BYTES, f"data parallel / DiLoCo bytes per worker: {st.fmt_ci(*ci[:3], '.1f')} "
                                f"(H = {H0})", v))
    md += _claims_table(claims)
    for c, e, v in claims:
        rep.claim_verdict(c, v, e)

    # ---- Figure 4: H
    hs = sorted(int(h) for h in arm(**nest, workers=W0)["H"].unique())
    if len(hs) >= 2:
        md += ["## Figure 4: the number of inner steps H", "",
               "Paper (section 3.1): 'In general, we observe that communicating more frequently improves "
               "generalization performance. However, communicating more frequently than H = 500 steps leads to "
               "diminishing returns. Moreover, the performance degradation is very mild up to H = 1000 steps.'", "",
               f"DiLoCo W = {W0}, outer Nesterov, non-i.i.d. shards, {T} steps; H = {H0} is the main file's run. "
               "Each doubling of H is one cell (the loss at 2H minus the loss at H, paired by seed).", "",
               "| H | outer steps | bytes sent per worker | val loss | per-char ppl |",
               "| ---: | ---: | ---: | ---: | ---: |"]
        for h in hs:
            sub = arm(**nest, workers=W0, H=h)
            md.append(f"| {h} | {T // h} | {sub['bytes_sent_per_worker'].mean():,.0f} | "
                      f"{_fmt_loss(list(sub['final_val_loss']))} | {_ppl(list(sub['final_val_loss']))} |")
        md.append("")
        loss = {h: _by_seed(arm(**nest, workers=W0, H=h)) for h in hs}
        claims = []
        lo, hi = hs[0], hs[-1]
        v, _, e = lower_claim(paired_diffs(loss[lo], loss[hi]))
        claims.append((C_H_END.format(lo=lo, hi=hi), f"H = {hi} minus H = {lo}: {e}", v))
        cells = {f"H {a} -> {b}": paired_diffs(loss[a], loss[b]) for a, b in zip(hs, hs[1:])}
        v, e = every_cell(cells)
        claims.append((C_H_EVERY.format(hs=", ".join(str(h) for h in hs)), e, v))
        v, e = mild_claim(paired_diffs(loss[lo], loss[hi]))
        claims.append((C_H_MILD.format(r=hi / lo, lo=lo, hi=hi), f"per-char perplexity ratio - 1: {e}", v))
        md += _claims_table(claims)
        for c, e, v in claims:
            rep.claim_verdict(c, v, e)

    # ---- Figure 6: the outer optimizer
    outers = arm(kind="diloco", workers=W0, H=H0, partition="contiguous", steps=T)
    if outers["outer"].nunique() >= 2:
        md += ["## Figure 6: the outer optimizer", "",
               "Paper (section 3.1): 'We found that using as outer optimizer SGD (equivalent to FedAvg) or Adam (eq. "
               "to FedOpt) performed poorly, as shown in Figure 6. [...] We found Nesterov optimizer [...] to perform "
               "the best.'", "",
               f"DiLoCo W = {W0}, H = {H0}, non-i.i.d. shards; outer SGD at lr 1 is FedAvg (local SGD); "
               "outer Adam has beta2 0.999 and epsilon 1e-8 (the workbench's).", "",
               "| outer optimizer | lr | val loss | per-char ppl |", "| --- | ---: | ---: | ---: |"]
        for o in ("nesterov", "sgd", "adam"):
            sub = outers[outers["outer"] == o]
            if len(sub):
                md.append(f"| {o} | {sub['outer_lr'].iloc[0]:g} | {_fmt_loss(list(sub['final_val_loss']))} | "
                          f"{_ppl(list(sub['final_val_loss']))} |")
        md.append("")
        claims = []
        nl = _by_seed(outers[outers["outer"] == "nesterov"])
        for o, c in (("sgd", C_SGD), ("adam", C_ADAM)):
            sub = outers[outers["outer"] == o]
            if len(sub):
                v, _, e = lower_claim(paired_diffs(nl, _by_seed(sub)))
                claims.append((c, f"{o} minus Nesterov: {e}", v))
        md += _claims_table(claims)
        for c, e, v in claims:
            rep.claim_verdict(c, v, e)

    # ---- Figure 5: i.i.d. vs non-i.i.d.
    iid = arm(kind="diloco", workers=W0, H=H0, outer="nesterov", partition="iid", steps=T)
    if not iid.empty and not d0.empty:
        step1 = int(d0["first_eval_step"].iloc[0])
        f = 100.0 * step1 / T
        md += ["## Figure 5: i.i.d. vs non-i.i.d. shards", "",
               "Paper (Figure 5): 'DiLoCo converges faster in the i.i.d. setting but towards the end both data "
               "regimes attain similar generalization, highlighting the robustness of DiLoCo.'", "",
               f"DiLoCo W = {W0}, H = {H0}, outer Nesterov; non-i.i.d. = each worker a contiguous stretch of the "
               f"training text (partition contiguous), i.i.d. = windows from the whole text. Validation loss at the "
               f"first evaluation (step {step1}, {f:g}% of the steps) and at the end.", "",
               f"| shards | val loss at step {step1} | final val loss | per-char ppl |", "| --- | ---: | ---: | ---: |"]
        for name, sub in (("non-i.i.d.", d0), ("i.i.d.", iid)):
            md.append(f"| {name} | {_fmt_loss(list(sub['first_val_loss']))} | {_fmt_loss(list(sub['final_val_loss']))} "
                      f"| {_ppl(list(sub['final_val_loss']))} |")
        md.append("")
        e_non, e_iid = _by_seed(d0, "first_val_loss"), _by_seed(iid, "first_val_loss")
        f_non, f_iid = _by_seed(d0), _by_seed(iid)
        claims = []
        v, _, e = lower_claim(paired_diffs(e_iid, e_non))
        claims.append((C_IID_EARLY.format(f=f), f"non-i.i.d. minus i.i.d. at step {step1}: {e}", v))
        gap_e = {s: e_non[s] - e_iid[s] for s in set(e_non) & set(e_iid)}
        gap_f = {s: f_non[s] - f_iid[s] for s in set(f_non) & set(f_iid)}
        v, _, e = shrink_claim(gap_e, gap_f)
        claims.append((C_IID_SHRINK.format(f=f), f"gap at step {step1} minus gap at the end: {e}", v))
        v, e = within_claim(paired_diffs(f_iid, f_non))
        claims.append((C_IID_END, f"non-i.i.d. / i.i.d. per-char perplexity - 1: {e}", v))
        md += _claims_table(claims)
        for c, e, v in claims:
            rep.claim_verdict(c, v, e)

    # ---- Table 3: replicas
    reps = arm(kind="diloco", H=H0, outer="nesterov", partition="contiguous", steps=T)
    ws = sorted(int(w) for w in reps["workers"].unique())
    if len(ws) >= 2:
        md += ["## Table 3: the number of replicas", "",
               "Paper (section 3.1): 'increasing the number of replicas improves generalization performance, but "
               "with diminishing returns when there are more than 8 workers. This finding applies to both i.i.d. and "
               "non-i.i.d. settings.'", "",
               f"DiLoCo at H = {H0}, outer Nesterov, non-i.i.d. shards, {T} inner steps per replica (so W replicas "
               "train on W times the data); W = 1 is the single-worker baseline of Table 2 (the paper's row 1).", "",
               "| replicas | val loss | per-char ppl | paper's ppl (non-i.i.d.) |", "| ---: | ---: | ---: | ---: |"]
        paper = {1: "16.23", 4: "15.18", 8: "15.02", 16: "14.91", 64: "14.96"}
        rows = [(1, base)] + [(w, reps[reps["workers"] == w]) for w in ws]
        for w, sub in rows:
            if len(sub):
                md.append(f"| {w} | {_fmt_loss(list(sub['final_val_loss']))} | {_ppl(list(sub['final_val_loss']))} | "
                          f"{paper.get(w, '-')} |")
        md.append("")
        loss = {w: _by_seed(sub) for w, sub in rows if len(sub)}
        order = sorted(loss)
        cells = {f"W {a} -> {b}": paired_diffs(loss[b], loss[a]) for a, b in zip(order, order[1:])}
        v, e = every_cell(cells)
        claims = [(C_REPL.format(ws=", ".join(str(w) for w in order)), e, v)]
        md += _claims_table(claims)
        for c, e, v in claims:
            rep.claim_verdict(c, v, e)

    md += ["## Not reproduced here", "",
           "Figure 3 (pretraining steps before DiLoCo: every run here starts from a random model, the paper's "
           "Figure 3 'no pretraining' case), Table 3's 16 and 64 replicas (its 'diminishing returns beyond 8 "
           "workers'), Table 4 (model size), Figure 7 (adaptive compute), Figure 8 (dropped outer gradients), "
           "Figure 9 (a single replica) and Table 6 (pruned outer gradients).", ""]
    rep.seeds = int(df.groupby("arm")["seed"].nunique().min()) if len(df) else None
    wall = float(df["wall_s"].sum()) if len(df) else 0.0
    rep.runtime = {"experiment": f"{wall / 60:.1f} min (sum of run wall times)"}
    rep.text("\n".join(md))
    rep.data(df.drop(columns=["file"]))
    rep.figure(_figure(df, H0, W0, T, hs if len(hs) >= 2 else [H0]))
    return rep


def _claims_table(claims: Sequence[tuple[str, str, str]]) -> list[str]:
    return (["| claim | ours (paired by seed) | verdict |", "| --- | --- | --- |"]
            + [f"| {c} | {e} | **{v}** |" for c, e, v in claims] + [""])


def _figure(df: pd.DataFrame, H0: int, W0: int, T: int, hs: Sequence[int]):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ax = axes[0]
    for (lab, sub), col in zip(df[df["spec"].isin((MAIN, UPD))].groupby("arm"),
                               ("tab:red", "tab:green", "tab:gray", "tab:blue")):
        for i, (_, r) in enumerate(sub.iterrows()):
            c = load([r["file"]]).curve(r["run_id"]).dropna(subset=["test_loss"])
            ax.plot(c["step"] / r["steps"], c["test_loss"], "o-", color=col, lw=0.8, ms=3, alpha=0.7,
                    label=lab if i == 0 else None)
    ax.set_xlabel("fraction of the run's steps")
    ax.set_ylabel("validation loss (nats/char)")
    ax.set_title("Table 2 arms", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[1]
    sub = df[(df["kind"] == "diloco") & (df["workers"] == W0) & (df["outer"] == "nesterov")
             & (df["partition"] == "contiguous") & (df["steps"] == T)]
    for s, g in sub.groupby("seed"):
        g = g.sort_values("H")
        ax.plot(g["H"], g["final_val_loss"], "o-", lw=0.8, label=f"seed {s}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("H (inner steps per outer step)")
    ax.set_ylabel("final validation loss")
    ax.set_title(f"Figure 4: H (W = {W0}, non-i.i.d.)", fontsize=9)
    ax.legend(fontsize=6)
    ax = axes[2]
    sub = df[(df["kind"] == "diloco") & (df["workers"] == W0) & (df["H"] == H0) & (df["steps"] == T)]
    names = []
    for i, ((o, p), g) in enumerate(sub.groupby(["outer", "partition"])):
        ax.scatter([i] * len(g), g["final_val_loss"].clip(upper=10), s=14)
        names.append(f"{o}\n{'non-iid' if p == 'contiguous' else 'iid'}")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=7)
    ax.set_ylabel("final validation loss")
    ax.set_title(f"Figures 5-6 (W = {W0}, H = {H0})", fontsize=9)
    for a in axes:
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig
