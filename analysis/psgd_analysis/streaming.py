"""R15: Streaming DiLoCo (Douillard et al., arXiv:2501.18512) on the workbench's char-level GPT,
at the paper's M = 2 replicas and H = 100: its three changes to DiLoCo, each against the run
without it (section 2.2 fragments, section 2.3 overlap with tau inner steps and the merge
factor alpha, section 2.4 outer gradients at 4 bits), their combination against data
parallelism (sections 3.2.1-3.2.2, Tables 1 and 5), and the bandwidth each needs for a compute
utilization (section 3.1, Table 4) from the workbench's calibrated clock.

Four specs (experiments/streaming/streaming_lm_*.json): base (data parallelism, DiLoCo, Streaming
DiLoCo at P = 2 and 4 fragments, no overlap, 32 bits), overlap (P = 4, tau = 1, 5, 10, alpha = 0
and 0.5), quant (P = 4, 16, 8 and 4 bits) and full (P = 4, tau = 1, alpha 0.5, 4 bits: the
paper's "Streaming DiLoCo with overlapped FP4 communication"). Every arm starts from the same
model and sees the same windows per seed, so every claim compares final validation losses
paired by seed. The rules below were fixed before the runs of seeds 1-5 and are tested on made-up
numbers in tests/analysis/test_streaming.py, but for the overlap claim's reference (tau = 0 at the
same alpha), changed after those runs had been read (the catalog's protocol row says so). The fragments claim's confirmation on seeds 6-35
(CONF below) was chosen after seeds 1-5 had been read: its arms, seeds and rule (the same rule
and margin) were set before its runs, the code reading it was written while they ran and before
their results were read; the report gives its sensitivity (at half the alpha, and pooled). The
overlap claim's confirmation (OCONF) followed the same way; its code was committed four minutes after
the first of its runs had finished, before any of their losses were read.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _sst

from . import stats as st
from .diloco import _claims_table, _fmt_loss, _ppl, lower_claim, paired_diffs
from .report import Report
from .results import load

BASE, OVER, QUANT, FULL = "streaming_lm_base", "streaming_lm_overlap", "streaming_lm_quant", "streaming_lm_full"
#: section 3.2: the outer LR was "tuned [...] to be optimal at small scale at 0.4, and kept [...] fixed across all
#: scales", the same for Streaming DiLoCo: here chosen the same way, on DiLoCo, on a validation split
OLR = "streaming_lm_outer_lr"
#: the fragments claim's confirmation: DiLoCo and P = 2, 4 on fresh seeds, run after seeds 1-5 had been read
#: and left the claim open; the claim is decided on these seeds alone (seeds 1-5 are reported beside, as the
#: exploration that motivated it), so the seeds that chose to confirm do not also decide
CONF = "streaming_lm_confirm"
#: the overlap claim's confirmation, chosen the same way and for the same reason: every overlap arm
#: (tau = 0, 1, 5, 10 at alpha = 0 and 0.5) on the fresh seeds 6-35, the rule and margin unchanged; its
#: tau = 0, alpha = 0 runs repeat CONF's P = 4 runs (checked in the report)
OCONF = "streaming_lm_overlap_confirm"
#: section 3.3.2 (Figure 8): "the degradation in evaluation loss is negligible up to an overlap of
#: 10 inner steps (< 0.2%)": the paper's one number for a change that costs nothing, used for every
#: claim of that kind (fragments, overlap, quantization)
NEGLIGIBLE = 0.002
#: Table 5, the smallest model (35M, chinchilla-optimal): data parallelism 3.51, Streaming DiLoCo
#: H = 100 with overlapped FP4 3.56: the paper's largest gap between the two, +1.4%
DP_GAP_PAPER = 3.56 / 3.51 - 1.0
CUS = (0.5, 0.9, 0.95, 0.99)

C_FRAG = ("Section 2.2, Figure 5, Table 5: splitting DiLoCo's outer synchronization into P = {ps} fragments (no overlap, "
          "32 bits) does not raise its final loss by more than 0.2% at the same H (the paper compares the whole method, "
          "with overlapped FP4, at H = 30: 'perform all similarly', 2.48 vs 2.49 at 1B)")
C_OVER = ("Figure 8: overlapping each fragment's communication with tau = {taus} inner steps, at alpha = {alphas}, "
          "raises the final loss by less than 0.2% over no overlap at the same alpha ('negligible up to an overlap of "
          "10 inner steps')")
C_QUANT = ("Sections 2.4, 3.3.3: outer gradients sent at {bits} bits raise the final loss by less than 0.2% over 32 bits "
           "('lowering the precision, from float32 to float4 does not affect the performance')")
C_DP_ORDER = ("Table 5: data parallelism ends below Streaming DiLoCo with overlapped FP4 at H = 100, as at every scale "
              "from 35M to 1B (35M: 3.51 vs 3.56; 'usually a slight advantage for Data-Parallel'; the size of the gap "
              "is the next claim)")
C_DP_GAP = ("Table 5: Streaming DiLoCo with overlapped FP4 at H = 100 ends within the paper's largest gap to data "
            "parallelism (+1.4%, the 35M model)")
C_PEAK = ("Section 2.2, Table 1: P fragments cut the largest message of a round by about P (the paper: 24 layers / 3 "
          "per fragment = 8x)")
C_BYTES = ("Table 1: Streaming DiLoCo with 4-bit outer gradients sends about H x 32 / 4 fewer bytes per worker than "
           "data parallelism's 32-bit gradients (the paper: 400x at H = 100, which is H x 16 / 4: its data "
           "parallelism's gradients at 16 bits, our reading)")
C_CU_SPLIT = ("Section 3.1: Streaming DiLoCo without overlap needs less bandwidth than DiLoCo for the same compute "
              "utilization ('despite exchanging as much data, because it reduces the latency')")
C_CU_OVER = ("Table 4: overlap (tau = 1) with FP4 needs less bandwidth than DiLoCo for a compute utilization of 90%, "
             "95% and 99% (1B: 1.7 / 2.0 / 3.0 against 13.3 / 23.3 / 86.8 Gbit/s)")
C_CU_DP = ("Table 4: data parallelism needs about two orders of magnitude more bandwidth than Streaming DiLoCo with "
           "overlapped FP4 for a compute utilization of 95% (1B: 222.3 against 2.0 Gbit/s)")


# ------------------------------------------------------------------------------- the rules
def rel_diffs(ref: Mapping[int, float], arm: Mapping[int, float]) -> list[float]:
    """Per seed (both present, both finite), the arm's relative loss change over the reference:
    arm / ref - 1 (positive = the arm ends higher). A diverged arm (+inf) gives +inf, a diverged
    reference -inf; both diverged: dropped."""
    out = []
    for s in sorted(set(ref) & set(arm)):
        a, r = float(arm[s]), float(ref[s])
        if math.isinf(a) and math.isinf(r):
            continue
        out.append(math.inf if math.isinf(a) else -math.inf if math.isinf(r) else a / r - 1.0)
    return out


def below_margin(x: Sequence[float], margin: float) -> tuple[str, float, str]:
    """'The arm's loss is at most ``margin`` (relative) above the reference's': a one-sided
    non-inferiority test on the per-seed relative changes. HOLDS when the upper end of the 90%
    Student-t interval (one-sided 5%) lies below the margin, DOES NOT HOLD when the lower end of
    the 95% interval lies above it, else INCONCLUSIVE. A diverged arm counts against the claim by
    the exact sign test on 'below the margin'. Returns (verdict, the one-sided p-value that the mean
    is above the margin (for Holm across cells), text)."""
    v = [float(a) for a in x if not math.isnan(a)]
    if any(math.isinf(a) for a in v):
        k = sum(1 for a in v if a < margin)
        return (st.decide_exact(k, len(v)), st.binom_less(k, len(v)),
                f"{sum(1 for a in v if math.isinf(a))} of {len(v)} seeds with a diverged run; {k} below the margin")
    if len(v) < 2 or st.is_constant(v):
        return st.INCONCLUSIVE, math.nan, f"n = {len(v)}" + (" (constant across seeds)" if len(v) >= 2 else "")
    m, _, hi90, n = st.t_interval(v, 0.90)
    _, lo, hi, _ = st.t_interval(v, 0.95)
    verdict = st.HOLDS if hi90 < margin else st.FAILS if lo > margin else st.INCONCLUSIVE
    p = st.t_pvalues(v, margin)[0]
    return verdict, p, (f"{100 * m:+.3f}% [95%: {100 * lo:+.3f}%, {100 * hi:+.3f}%; one-sided 95% bound "
                        f"{100 * hi90:+.3f}%] (n = {n}; margin +{100 * margin:g}%)")


def every_below(cells: Mapping[str, Sequence[float]], margin: float) -> tuple[str, str]:
    """below_margin in every cell: HOLDS when every cell holds (intersection-union), DOES NOT HOLD
    when Holm over the cells' p-values (mean above the margin) rejects one at family-wise 5%,
    else INCONCLUSIVE."""
    if not cells:
        return st.INCONCLUSIVE, "no cell"
    dec = {c: below_margin(v, margin) for c, v in cells.items()}
    if all(d[0] == st.HOLDS for d in dec.values()):
        verdict = st.HOLDS
    else:
        ps = [d[1] if np.isfinite(d[1]) else 1.0 for d in dec.values()]
        verdict = st.FAILS if any(st.holm(ps)) else st.INCONCLUSIVE
    return verdict, "; ".join(f"{c}: {d[2]}" for c, d in dec.items())


def decide_confirmed(explore: Mapping[str, Sequence[float]], confirm: Mapping[str, Sequence[float]] | None,
                     margin: float, seeds: str = "") -> tuple[str, str]:
    """every_below decided on the confirmation's cells alone when it ran (the exploratory cells only
    reported beside it), else on the exploratory cells: a claim that the first seeds left open is not
    decided by the seeds that made us run more."""
    ve, ee = every_below(explore, margin)
    if not confirm:
        return ve, ee
    vc, ec = every_below(confirm, margin)
    return vc, f"fresh seeds{(' ' + seeds) if seeds else ''} (the data's verdict): {ec}; the exploratory seeds (not pooled): {ee}"


def peak_bytes(fragments: Sequence[tuple[int, int]], n: int, bits: int = 32) -> float:
    """The largest message one round sends per worker before the allreduce's 2 (W-1)/W: the
    largest fragment's floats at ``bits`` each (``fragments``: (offset, size) in floats, as
    /runs/*/workers/fragments stores them; none: the whole model of ``n`` floats, DiLoCo and
    data parallelism)."""
    floats = max((size for _, size in fragments), default=n)
    return floats * bits / 8.0


def choose_outer_lr(val: Mapping[float, Sequence[float]]) -> tuple[float, bool]:
    """The outer LR with the lowest seed-mean validation loss (a diverged run's loss is +inf, so an
    LR with one is never chosen over a finite one); ties: the smaller LR. Returns (LR, whether it
    is inside the grid: neither its smallest nor its largest value). NaN when none is finite."""
    means = {lr: float(np.mean(v)) for lr, v in val.items() if len(v)}
    finite = {lr: m for lr, m in means.items() if np.isfinite(m)}
    if not finite:
        return math.nan, False
    best = min(sorted(finite), key=lambda lr: finite[lr])
    return best, min(means) < best < max(means)


def ratio_claim(num: Sequence[float], den: Sequence[float], expect: float) -> tuple[str, str]:
    """A ratio a formula fixes (bytes): the measured per-seed ratios' interval and the formula's
    value beside it; the verdict from the data alone is whether the ratio is above 1."""
    r = [a / b for a, b in zip(num, den) if b > 0]
    v, ci = st.decide_mean(r, 1.0, "above")
    return v, f"{st.fmt_ci(*ci[:3], '.1f')} (the formula: {expect:.1f})"


# --------------------------------------------------------------------- reading the files
def arm_of(cfg: Mapping) -> dict:
    a = cfg.get("algorithm", {})
    a = a if isinstance(a, dict) else {"name": a}
    name = a.get("name", "")
    d = {"kind": {"sync_sgd": "dp", "diloco": "diloco", "streaming_diloco": "streaming"}.get(name, name),
         "workers": int(cfg.get("workers", 1)), "steps": int(cfg.get("steps", 0)), "H": 1, "P": 1, "tau": 0,
         "alpha": 0.0, "bits": 32, "outer_lr": math.nan}
    if name in ("diloco", "streaming_diloco"):
        d.update(H=int(a.get("sync_every", 500)), outer_lr=float(a.get("outer_lr", 0.7)))
    if name == "streaming_diloco":
        d.update(P=int(a.get("num_fragments", 1)), tau=int(a.get("fragment_sync_delay", 0)),
                 alpha=float(a.get("fragment_update_alpha", 0.0)), bits=int(a.get("quantize_bits", 32)))
    return d


def label(r: Mapping) -> str:
    if r["kind"] == "dp":
        return f"data parallel W = {r['workers']}"
    if r["kind"] == "diloco":
        return f"DiLoCo H = {r['H']}"
    return f"Streaming P = {r['P']}, tau = {r['tau']}, alpha = {r['alpha']:g}, {r['bits']} bits"


def collect(paths: Sequence[str]) -> pd.DataFrame:
    """One row per run: its arm, seed, status, final validation loss (+inf when not completed or
    not finite), bytes sent per worker, the largest round's message, compute utilization, wall."""
    rows = []
    for p in paths:
        res = load([p])
        # /runs/<id>/workers/fragments (the loader reads the workers group): (offset, size) per fragment
        frags = {rid: [tuple(int(x) for x in row) for row in res.run(rid).get("workers", {}).get("fragments", [])]
                 for rid in res.run_ids()}
        for _, r in res.runs.iterrows():
            d = arm_of(r["config"])
            bad = r["status"] != "completed" or not np.isfinite(float(r.get("final_test_loss", math.nan)))
            vl = float(r.get("final_val_loss", math.nan)) if r.get("final_val_loss") is not None else math.nan
            d.update(spec=os.path.basename(p)[:-3], seed=int(r["seed"]), status=r["status"],
                     final_val_loss=math.inf if bad else float(r["final_test_loss"]),
                     split_val_loss=math.inf if bad else vl,
                     bytes_sent_per_worker=float(r.get("bytes_sent_per_worker", math.nan)),
                     compute_utilization=float(r.get("compute_utilization", math.nan)),
                     sim_s=float(r.get("sim_s", math.nan)), wall_s=float(r["wall_s"]), run_id=r["run_id"], file=p,
                     fragments=json.dumps(frags.get(r["run_id"], [])))
            d["arm"] = label(d)
            rows.append(d)
    return pd.DataFrame(rows)


def bandwidth_table(paths: Sequence[str], wb: str | None = None) -> pd.DataFrame:
    """`workbench bandwidth FILE --cu ... --link cross --json` for every file: per run the
    cross-node bandwidth (bytes/s) at which the run's recorded communication, priced again on the
    run's own profile, reaches each compute utilization. The binary: ``wb``, else $PSGD_WB, else
    build/workbench of this checkout."""
    from . import catalog as _catalog
    wb = wb or os.environ.get("PSGD_WB") or os.path.join(_catalog.ROOT, "build", "workbench")
    rows = []
    for p in paths:
        try:
            out = subprocess.run([wb, "bandwidth", p, "--cu", ",".join(f"{c:g}" for c in CUS), "--link", "cross",
                                  "--json"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            raise SystemExit(f"streaming: `{wb} bandwidth {p}` failed ({e}); build the workbench or set PSGD_WB")
        for r in json.loads(out):
            row = {"run_id": r["run"], "file": p, "clock": r.get("clock", "")}
            for c in CUS:
                b = (r.get("bandwidth_for_cu") or {}).get(f"{c:g}")
                row[f"cu{c:g}"] = float(b) if isinstance(b, (int, float)) else math.nan
            rows.append(row)
    return pd.DataFrame(rows)


def _by_seed(df: pd.DataFrame, col: str = "final_val_loss") -> dict[int, float]:
    """Seed -> value of one arm's runs; an arm with two runs of one seed is a selection error."""
    if df["seed"].duplicated().any():
        raise ValueError(f"streaming: two runs of one seed in an arm: {sorted(set(df['arm']))}")
    return {int(s): float(v) for s, v in zip(df["seed"], df[col])}


def _gbit(b: float) -> str:
    return "-" if not np.isfinite(b) else f"{8 * b / 1e9:.3g}"


def _seed_span(df: pd.DataFrame) -> str:
    """The runs' seeds as '6-35' when consecutive, else listed."""
    sd = sorted(int(x) for x in df["seed"].unique())
    return f"{sd[0]}-{sd[-1]}" if sd == list(range(sd[0], sd[-1] + 1)) else ", ".join(map(str, sd))


def _other_outer_lr(runs: pd.DataFrame, used: Sequence[float], what: str) -> str:
    """Why a confirmation's loss comparisons would not be at the tuned outer LR: its runs use another
    one than the main runs ``used`` ("" when they agree or either is unknown)."""
    lrs = sorted(set(float(x) for x in runs["outer_lr"] if np.isfinite(x)))
    return f"{what} runs at outer LR {', '.join(f'{x:g}' for x in lrs)}" if lrs and used and lrs != list(used) else ""


def _pooled(explore: Mapping[str, Sequence[float]], confirm: Mapping[str, Sequence[float]]) -> str:
    """Each cell's below_margin over the exploratory and the fresh seeds together (a sensitivity look, not
    the decision): its verdict and one-sided bound."""
    out = []
    for c, v in confirm.items():
        d = below_margin(list(explore.get(c, [])) + list(v), NEGLIGIBLE)
        out.append(f"{c}: {d[0]}, one-sided bound {d[2].split('one-sided 95% bound ')[-1].split(']')[0]}")
    return "; ".join(out)


# ------------------------------------------------------------------------------ the report
def report(paths: Sequence[str]) -> Report:
    by = {os.path.basename(p)[:-3]: p for p in paths}
    rep = Report("streaming-diloco", "R15: Streaming DiLoCo on the char-level GPT (arXiv:2501.18512 sections 2.2-2.4, "
                 "Figures 5 and 8, Tables 1, 4 and 5)")
    main_inputs = [by[s] for s in (OLR, BASE, OVER, QUANT, FULL) if s in by]
    rep.inputs = main_inputs + [by[s] for s in (CONF, OCONF) if s in by]
    df = collect([by[s] for s in (BASE, OVER, QUANT, FULL) if s in by])
    conf = collect([by[CONF]]) if CONF in by else pd.DataFrame()
    oconf = collect([by[OCONF]]) if OCONF in by else pd.DataFrame()
    md: list[str] = []
    # ---- the outer LR, chosen on the validation split before the runs below (section 3.2)
    tuned_why = ""
    tune_wall = 0.0
    used_olr: list[float] = []
    if OLR in by:
        tune = collect([by[OLR]])
        tune_wall = float(tune["wall_s"].sum())
        val = {float(lr): list(g["split_val_loss"]) for lr, g in tune.groupby("outer_lr")}
        lr_star, interior = choose_outer_lr(val)
        md += ["## The outer learning rate", "",
               "Paper (section 3.2): the outer LR was 'tuned [...] to be optimal at small scale at 0.4, and kept [...] "
               "fixed across all scales', the same value for Streaming DiLoCo. Here the same procedure at this scale: "
               "DiLoCo at M = 2, H = 100, each outer LR on seeds 1-3, the final loss on a validation split (the last 2% "
               "of the training windows, held back from training; never the test text), the lowest seed mean chosen.",
               "", "| outer LR | validation loss (seeds) | mean |", "| ---: | --- | ---: |"]
        for lr in sorted(val):
            md.append(f"| {lr:g} | {', '.join(f'{x:.4f}' for x in val[lr])} | {float(np.mean(val[lr])):.4f} |")
        md += ["", f"Chosen: **{lr_star:g}** ({'inside' if interior else 'at the edge of'} the grid).", ""]
        used = sorted(set(float(x) for x in df.loc[df["kind"] != "dp", "outer_lr"]))
        used_olr = used
        if not interior:
            tuned_why = f"the outer-LR search chose {lr_star:g} at its grid's edge"
        elif used != [lr_star]:
            tuned_why = (f"the runs use outer LR {', '.join(f'{x:g}' for x in used)}, not the {lr_star:g} the search "
                         "chose on validation")
    else:
        tuned_why = "no outer-LR search among the inputs"

    def tuned(v: str) -> str:
        # a loss comparison at an outer LR other than the one chosen as the paper chose its own (the claims
        # that a catalog rule already takes out of the data's hands keep that rule's reason)
        return f"{st.NOT_TESTED} ({tuned_why}; the data alone: {v})" if tuned_why else v

    def arm(**kw) -> pd.DataFrame:
        m = df
        for k, v in kw.items():
            m = m[m[k] == v]
        return m

    dil = arm(kind="diloco")
    H = int(dil["H"].iloc[0]) if len(dil) else 0
    W = int(df["workers"].iloc[0]) if len(df) else 0
    T = int(df["steps"].iloc[0]) if len(df) else 0
    dp = arm(kind="dp")
    # the fragment arms and the reference of the overlap and quantization claims: the base file's
    # streaming runs (no overlap, alpha 0, 32 bits); the overlap file repeats P0's at tau = 0
    plain = arm(spec=BASE, kind="streaming", tau=0, alpha=0.0, bits=32)
    ps = sorted(int(p) for p in plain["P"].unique())
    P0 = max(ps) if ps else 0
    ref0 = plain[plain["P"] == P0]
    full = arm(spec=FULL)

    # ---- the arms
    md += ["## The arms", "",
           f"M = {W} replicas, H = {H}, {T} inner steps each, outer Nesterov (lr {dil['outer_lr'].iloc[0] if len(dil) else '-'}"
           ", momentum 0.9), i.i.d. windows. Final held-out loss in nats per character (the test text: the book's last 10%, never used for a choice), "
           f"mean [95% interval] over seeds ({st.METHOD}); bytes: what each worker put on the network over the run "
           "(the runs' summaries); largest message: the largest fragment's floats at the arm's bits (the whole model "
           "for data parallelism and DiLoCo); compute utilization: compute / simulated time on the run's calibrated "
           "profile at its recorded link.", "",
           "| arm | held-out (test) loss | per-char ppl | bytes sent per worker | largest message (bytes) | compute utilization |",
           "| --- | ---: | ---: | ---: | ---: | ---: |"]
    # the overlap file's tau = 0, alpha = 0 runs repeat the base file's (checked below): one row each
    rep_runs = (df["spec"] == OVER) & (df["tau"] == 0) & (df["alpha"] == 0)
    streams = df[(df["kind"] == "streaming") & ~rep_runs]
    order = [("dp", dp), ("diloco", dil)] + [(a, g) for a, g in streams.groupby("arm", sort=False)]
    n_model = next((sum(size for _, size in json.loads(f)) for f in df["fragments"] if json.loads(f)), 0) if len(df) else 0
    for _, sub in order:
        if sub.empty:
            continue
        r0 = sub.iloc[0]
        fr = json.loads(r0["fragments"]) or []
        peak = peak_bytes(fr, n_model, int(r0["bits"])) if (fr or n_model) else math.nan
        md.append(f"| {r0['arm']} | {_fmt_loss(list(sub['final_val_loss']))} | {_ppl(list(sub['final_val_loss']))} | "
                  f"{sub['bytes_sent_per_worker'].mean():,.0f} | {'-' if not np.isfinite(peak) else f'{peak:,.0f}'} | "
                  f"{sub['compute_utilization'].mean():.4f} |")
    md.append("")
    claims: list[tuple[str, str, str]] = []

    # ---- fragments (section 2.2)
    if len(dil) and ps:
        cells = {f"P = {p}": rel_diffs(_by_seed(dil), _by_seed(plain[plain["P"] == p])) for p in ps}
        ccells, cseeds = None, ""
        if len(conf):
            cd, cs = conf[conf["kind"] == "diloco"], conf[conf["kind"] == "streaming"]
            ccells = {f"P = {p}": rel_diffs(_by_seed(cd), _by_seed(cs[cs["P"] == p])) for p in ps}
            cseeds = _seed_span(conf)
            tuned_why = tuned_why or _other_outer_lr(conf, used_olr, "the confirmation")
        v, e = decide_confirmed(cells, ccells, NEGLIGIBLE, cseeds)
        if ccells:
            # why this many fresh seeds: the one-sided 95% bound a true difference of 0 would get at the
            # exploratory seeds' largest spread
            n_conf = min(len(v) for v in ccells.values())
            sd_e = max(float(np.std([x for x in v if math.isfinite(x)], ddof=1)) for v in cells.values())
            bound0 = float(_sst.t.ppf(0.95, n_conf - 1)) * sd_e / math.sqrt(n_conf) if n_conf > 1 else math.inf
            eseeds = f"seeds {_seed_span(plain)}"
            md += [f"Fragments' confirmation: {eseeds} decided the fragments claim {every_below(cells, NEGLIGIBLE)[0]} "
                   f"at the 0.2% margin, so DiLoCo and P = {' and '.join(str(p) for p in ps)} ran again on fresh seeds "
                   f"{cseeds} ({len(conf)} runs, experiments/streaming/{CONF}.json), with the rule and the margin "
                   f"unchanged. The data's verdict is read on those seeds alone; {eseeds} are not pooled with them (they "
                   f"chose to confirm, so they do not also decide). The confirmation was chosen after {eseeds} had been "
                   "read (post hoc: its arms, seeds and rule were set before its runs, the code that reads it was "
                   f"written while they ran); {n_conf} seeds because, at {eseeds}' largest spread (standard deviation "
                   f"{100 * sd_e:.2f}%), a true difference of 0 would put the one-sided bound near "
                   f"+{100 * bound0:.2f}%, inside the margin.", ""]
            # two looks at one claim: the decision at half the alpha, and over every seed, beside it
            half = {c: st.t_interval([x for x in v if math.isfinite(x)], 0.95) for c, v in ccells.items()}
            md += ["Sensitivity of that decision: at half the alpha (the one-sided 97.5% bound) "
                   + "; ".join(f"{c}: {100 * h[2]:+.3f}%" for c, h in half.items())
                   + f" (margin +0.2%); pooled over {eseeds} and the fresh seeds " + _pooled(cells, ccells) + ".", ""]
            # where the fragments end against DiLoCo (not the claim, which is one-sided): each cell's 95%
            # interval, and the cells together (Bonferroni over them: 1 - 0.05 / cells)
            bon = 1.0 - 0.05 / max(len(ccells), 1)
            mc = {c: (st.t_interval([x for x in v if math.isfinite(x)], 0.95),
                      st.t_interval([x for x in v if math.isfinite(x)], bon)) for c, v in ccells.items()}
            below = [c for c, (a, b) in mc.items() if b[2] < 0]
            md += ["Where the fragments end on the fresh seeds (the claim is one-sided, not above DiLoCo by more than "
                   "0.2%; an equivalence test at +-0.2% would not decide it): "
                   + "; ".join(f"{c}: {100 * a[0]:+.3f}%, 95% upper end {100 * a[2]:+.3f}%, with the cells corrected "
                               f"(Bonferroni) {100 * b[2]:+.3f}%" for c, (a, b) in mc.items())
                   + (f": below DiLoCo for {' and '.join(below)} after the correction"
                      + (", at 0 for the rest" if len(below) < len(mc) else "") if below
                      else ": none below DiLoCo once the cells are corrected") + ".", ""]
        claims.append((C_FRAG.format(ps=" and ".join(str(p) for p in ps)), f"relative to DiLoCo: {e}", tuned(v)))
    # ---- overlap (section 2.3, Figure 8)
    ov = arm(spec=OVER)
    if len(ov) and len(ref0):
        taus = sorted(int(t) for t in ov["tau"].unique() if t > 0)
        alphas = sorted(float(a) for a in ov["alpha"].unique())

        def no_overlap(a: float) -> pd.DataFrame:
            # alpha mixes the local fragment with the outer one at tau = 0 too (section 2.3: 'alpha = 1 is
            # equivalent to no communication'), so each tau is compared with tau = 0 at its own alpha
            r = ov[(ov["tau"] == 0) & (ov["alpha"] == a)]
            return r if len(r) else (ref0 if a == 0 else r)

        cells = {f"tau {t}, alpha {a:g}": rel_diffs(_by_seed(no_overlap(a)),
                                                    _by_seed(ov[(ov["tau"] == t) & (ov["alpha"] == a)]))
                 for t in taus for a in alphas}
        ocells, oseeds = None, ""
        if len(oconf):
            def oc(t: int, a: float) -> pd.DataFrame:
                return oconf[(oconf["tau"] == t) & (oconf["alpha"] == a)]
            ocells = {f"tau {t}, alpha {a:g}": rel_diffs(_by_seed(oc(0, a)), _by_seed(oc(t, a)))
                      for t in taus for a in alphas}
            oseeds = _seed_span(oconf)
            tuned_why = tuned_why or _other_outer_lr(oconf, used_olr, "the overlap confirmation")
        v, e = decide_confirmed(cells, ocells, NEGLIGIBLE, oseeds)
        claims.append((C_OVER.format(taus=", ".join(str(t) for t in taus), alphas=" and ".join(f"{a:g}" for a in alphas)),
                       f"relative to tau = 0 at the same alpha (P = {P0}): {e}", tuned(v)))
        if ocells:
            eseeds = f"seeds {_seed_span(ov)}"
            n_oc = min(len(x) for x in ocells.values())
            md += [f"Overlap's confirmation: {eseeds} decided the overlap claim {every_below(cells, NEGLIGIBLE)[0]} at "
                   f"the 0.2% margin, so every overlap arm (tau = 0, {', '.join(str(t) for t in taus)} at alpha = "
                   f"{' and '.join(f'{a:g}' for a in alphas)}) ran again on fresh seeds {oseeds} ({len(oconf)} runs, "
                   f"experiments/streaming/{OCONF}.json), with the rule and the margin unchanged, after the fragments' "
                   f"confirmation and for the same reason (post hoc: its arms and seeds were set before its runs, the "
                   f"rule and the margin long before; the code that reads it was committed minutes after its first "
                   f"runs had finished, before any of their losses were read, and the spec's description line was "
                   f"shortened then, its arms and seeds unchanged). The data's verdict is read on those {n_oc} seeds alone; "
                   f"{eseeds} are reported beside and not pooled.", ""]
            # the decision cell by cell (every_below's parts): which cells are under the margin alone,
            # which Holm over the cells puts above it, and which stay open
            odec = {c: below_margin(x_, NEGLIGIBLE) for c, x_ in ocells.items()}
            rej = dict(zip(odec, st.holm([d[1] for d in odec.values()])))
            parts = [(what, [c for c in odec if pick(c)]) for what, pick in (
                ("under the margin", lambda c: odec[c][0] == st.HOLDS),
                ("above it (Holm over the cells)", lambda c: rej[c]),
                ("open", lambda c: odec[c][0] != st.HOLDS and not rej[c]))]
            md += ["The fresh seeds cell by cell: " + "; ".join(f"{what}: {' and '.join(f'({c})' for c in cs)}" for what, cs in parts if cs)
                   + ".", ""]
            half = {c: st.t_interval([x for x in x_ if math.isfinite(x)], 0.95) for c, x_ in ocells.items()}
            # a cell put above the margin is decided by the lower end of the 95% interval (one-sided 2.5%):
            # at half the alpha, the 97.5% interval's (one-sided 1.25%)
            lows = {c: st.t_interval([x for x in x_ if math.isfinite(x)], 0.975)[1] for c, x_ in ocells.items() if rej[c]}
            md += ["Sensitivity of that decision: at half the alpha, the upper bounds (one-sided 97.5%) "
                   + "; ".join(f"{c}: {100 * h[2]:+.3f}%" for c, h in half.items())
                   + (", and the lower ends (97.5% interval) of the cells above the margin: "
                      + "; ".join(f"{c}: {100 * lo:+.3f}%" for c, lo in lows.items()) if lows else "")
                   + " (margin +0.2%); pooled over the exploratory and the fresh seeds: " + _pooled(cells, ocells)
                   + ".", ""]
            if len(conf):
                # the confirmation's tau = 0, alpha = 0 arm is CONF's P = 4 arm run again: the same runs
                cs4 = conf[(conf["kind"] == "streaming") & (conf["P"] == P0)]
                d = [abs(x) for x in paired_diffs(_by_seed(cs4), _by_seed(oc(0, 0.0)))]
                if d:
                    md += [f"The overlap confirmation's tau = 0, alpha = 0 runs repeat the fragments' confirmation's "
                           f"P = {P0} runs: largest difference of their final losses {max(d):.3g} nats/char "
                           "(0: the same runs).", ""]
        elif len(conf) and v == st.INCONCLUSIVE:
            above = [c for c, x in cells.items() if x and float(np.mean(x)) > 0]
            md += [f"The overlap claim, INCONCLUSIVE on the same first seeds, had no confirmation on fresh seeds; "
                   f"{len(above)} of its {len(cells)} cells end above no overlap on average"
                   + (f" ({'; '.join(above)})" if above else "") + ".", ""]
        a0, a5 = no_overlap(0.0), no_overlap(0.5)
        if len(a0) and len(a5):
            # not a claim of the paper (its alpha comparison is in Figure 8's plot only): what the merge
            # factor alone does here, so that a reader sees why the alpha = 0.5 arms sit lower
            m, lo, hi, n = st.t_interval(rel_diffs(_by_seed(a0), _by_seed(a5)))
            md += [f"Merge factor alone (no overlap, P = {P0}): alpha = 0.5 against alpha = 0 changes the final loss by "
                   f"{100 * m:+.2f}% [{100 * lo:+.2f}%, {100 * hi:+.2f}%] (n = {n}, paired by seed): keeping half of "
                   "each replica's own fragment moves it only halfway to the outer model at every round.",
                   ""]
        same = no_overlap(0.0)
        if len(same) and same is not ref0:
            d = [abs(x) for x in paired_diffs(_by_seed(ref0), _by_seed(same))]
            md += [f"The overlap file's tau = 0, alpha = 0 runs repeat the base file's P = {P0} runs: largest "
                   f"difference of their final losses {max(d) if d else math.nan:.3g} nats/char (0: the same runs).", ""]
    # ---- quantization (section 2.4)
    qu = arm(spec=QUANT)
    if len(qu) and len(ref0):
        bits = sorted((int(b) for b in qu["bits"].unique()), reverse=True)
        cells = {f"{b} bits": rel_diffs(_by_seed(ref0), _by_seed(qu[qu["bits"] == b])) for b in bits}
        v, e = every_below(cells, NEGLIGIBLE)
        claims.append((C_QUANT.format(bits=", ".join(str(b) for b in bits)), f"relative to 32 bits (P = {P0}): {e}", v))
    # ---- against data parallelism (Table 5)
    if len(full) and len(dp):
        v, _, e = lower_claim(paired_diffs(_by_seed(dp), _by_seed(full)))
        claims.append((C_DP_ORDER, f"Streaming (P = {P0}, tau = 1, 4 bits) minus data parallel: {e}", tuned(v)))
        v, _, e = below_margin(rel_diffs(_by_seed(dp), _by_seed(full)), DP_GAP_PAPER)
        claims.append((C_DP_GAP, f"relative to data parallelism: {e} (margin: 3.56 / 3.51 - 1)", v))
    # ---- bytes (formulas)
    if len(dil) and len(ref0):
        fr = json.loads(ref0.iloc[0]["fragments"]) or []
        n = sum(size for _, size in fr)
        exp = n / max((size for _, size in fr), default=n) if n else math.nan
        v, e = ratio_claim([n * 4.0] * len(ref0), [peak_bytes(json.loads(f), n) for f in ref0["fragments"]], exp)
        claims.append((C_PEAK, f"DiLoCo's message / the largest of P = {P0}: {e} (the tensors' boundaries make the "
                               f"fragments unequal)", v))
    if len(full) and len(dp):
        a, b = _by_seed(dp, "bytes_sent_per_worker"), _by_seed(full, "bytes_sent_per_worker")
        s = sorted(set(a) & set(b))
        v, e = ratio_claim([a[i] for i in s], [b[i] for i in s], H * 32 / 4)
        claims.append((C_BYTES, f"data parallel / Streaming (4 bits) bytes per worker: {e}", v))

    # ---- compute utilization (section 3.1, Table 4)
    bw = bandwidth_table(main_inputs)
    if len(bw):
        df = df.merge(bw.drop(columns=["file"]), on="run_id", how="left")
        arm_bw = {lab: g for lab, g in df[~rep_runs].groupby("arm", sort=False)}
        md += ["## Bandwidth for a compute utilization (section 3.1, Table 4)", "",
               "Paper (section 3.1): 'Streaming DiLoCo (in green) improves the CU of DiLoCo (in orange) despite "
               "exchanging as much data, because it reduces the latency by splitting the communication of the outer "
               "gradients across fragments. 2) only overlapping communication with computation can reach full 100% "
               "compute utilization.'", "",
               "Cross-node bandwidth (Gbit/s; one replica a node) at which each run's recorded communication, priced "
               "again on its calibrated profile with the link's bandwidth as the unknown (`workbench bandwidth "
               "--link cross`), reaches the compute utilization; mean over seeds. The paper's 1B column (Table 4) "
               "beside: a 0.1s step of a 1B model, ours a step of ~3 ms of a 0.1M-parameter model, so only the "
               "order between the arms compares.", "",
               "| arm | " + " | ".join(f"CU {100 * c:g}%" for c in CUS) + " |", "| --- |" + " ---: |" * len(CUS)]
        for lab, g in arm_bw.items():
            md.append(f"| {lab} | " + " | ".join(_gbit(float(g[f'cu{c:g}'].mean())) for c in CUS) + " |")
        md.append("")

        def cu(sub: pd.DataFrame, c: float) -> dict[int, float]:
            return _by_seed(sub, f"cu{c:g}") if len(sub) and f"cu{c:g}" in sub else {}

        if len(dil) and len(ref0):
            dd = df[df["kind"] == "diloco"]
            sp = df[(df["spec"] == BASE) & (df["kind"] == "streaming") & (df["P"] == P0)]
            parts = []
            for c in CUS[1:]:
                a, b = cu(dd, c), cu(sp, c)
                parts.append(([a[s] / b[s] for s in sorted(set(a) & set(b)) if b[s] > 0], 1.0, "above", None))
            v = st.combine_parts(parts)
            r = [float(np.mean(p[0])) if p[0] else math.nan for p in parts]
            claims.append((C_CU_SPLIT, "DiLoCo's bandwidth / Streaming P = %d's at CU %s: %s" % (
                P0, ", ".join(f"{100 * c:g}%" for c in CUS[1:]), ", ".join(f"{x:.3f}" for x in r)), v))
        if len(dil) and len(full):
            dd, ff = df[df["kind"] == "diloco"], df[df["spec"] == FULL]
            parts, r = [], []
            for c in CUS[1:]:
                a, b = cu(dd, c), cu(ff, c)
                x = [a[s] / b[s] for s in sorted(set(a) & set(b)) if b[s] > 0]
                parts.append((x, 1.0, "above", None))
                r.append(float(np.mean(x)) if x else math.nan)
            claims.append((C_CU_OVER, "DiLoCo's bandwidth / overlapped FP4's at CU %s: %s" % (
                ", ".join(f"{100 * c:g}%" for c in CUS[1:]), ", ".join(f"{x:.1f}" for x in r)), st.combine_parts(parts)))
        if len(dp) and len(full):
            a, b = cu(df[df["kind"] == "dp"], 0.95), cu(df[df["spec"] == FULL], 0.95)
            x = [a[s] / b[s] for s in sorted(set(a) & set(b)) if b[s] > 0]
            v, ci = st.decide_mean(x, 100.0, "above")
            claims.append((C_CU_DP, f"data parallel's bandwidth / overlapped FP4's at CU 95%: {st.fmt_ci(*ci[:3], '.0f')} "
                                    "(two orders of magnitude read as at least 100x)", v))

    md = ["## Claims", "", "Each claim against the run without the change it tests, paired by seed; a claim that "
          "must hold in every cell holds when each cell does, and fails when Holm over the cells rejects one.", ""] + \
        _claims_table(claims) + md
    for c, e, v in claims:
        rep.claim_verdict(c, v, e)
    md += ["## Not reproduced here", "",
           "Sequential against strided fragments (Figures 2, 6-7: our fragments are runs of whole tensors in model "
           "order, the sequential pattern), the fragment size sweep (Figure 6), freezing the unsynchronized layers "
           "(FedPart), the replicas (Figure 12, Tables 6-7), H (Figure 13), per-worker tau (Figure 10), zeroing "
           "compressors (FedDropout, Dare, Top-K: Figure 11), model scale (Table 5's rows, Figure 5's scaling laws), "
           "the overtraining budgets of Table 1, which parameters to evaluate (Table 3: the outer model, as here, "
           "against one replica or the replicas' average), the compute-utilization profiles of Figures 9 and 15-16, the outer gradients' cosine similarities of Figures 17-18, "
           "the latency a fragment may take ('as long as a full forward/backward pass'), and section 1's 'strictly "
           "superior to the original DiLoCo' as a whole (its loss part is the first claim, its bandwidth part the "
           "bandwidth claims).", ""]
    rep.seeds = int(df.groupby("arm")["seed"].nunique().min()) if len(df) else None
    fresh = [(f"{int(c.groupby('arm')['seed'].nunique().min())} for the {what} claim")
             for c, what in ((conf, "fragments"), (oconf, "overlap")) if len(c)]
    if fresh and rep.seeds:
        rep.seeds = f"{rep.seeds} ({', '.join(fresh)})"
    conf_wall = float(conf["wall_s"].sum()) if len(conf) else 0.0
    oconf_wall = float(oconf["wall_s"].sum()) if len(oconf) else 0.0
    wall = (float(df["wall_s"].sum()) if len(df) else 0.0) + tune_wall + conf_wall + oconf_wall
    rep.runtime = {"experiment": f"{wall / 60:.1f} min (sum of run wall times, the outer-LR search's "
                                 f"{tune_wall / 60:.1f} min included" +
                                 (f", and the fragments' confirmation's {conf_wall / 60:.1f} min ({len(conf)} runs)"
                                  if len(conf) else "") +
                                 (f", and the overlap confirmation's {oconf_wall / 60:.1f} min ({len(oconf)} runs)"
                                  if len(oconf) else "") + ")"}
    rep.text("\n".join(md))
    extra = [c for c in (conf, oconf) if len(c)]
    rep.data(pd.concat([df] + extra, ignore_index=True).drop(columns=["file"]) if extra else df.drop(columns=["file"]))
    rep.figure(_figure(df[~rep_runs], P0))
    return rep


def _figure(df: pd.DataFrame, P0: int):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    ax = axes[0]
    labs = list(dict.fromkeys(df["arm"]))
    for i, lab in enumerate(labs):
        g = df[df["arm"] == lab]
        ax.scatter(g["final_val_loss"].clip(upper=10), [i] * len(g), s=14)
    ax.set_yticks(range(len(labs)))
    ax.set_yticklabels(labs, fontsize=6)
    ax.set_xlabel("final validation loss (nats/char)")
    ax.set_title("every arm, every seed", fontsize=9)
    ax = axes[1]
    if "cu0.9" in df:
        for lab in labs:
            g = df[df["arm"] == lab]
            ys = [8 * float(g[f"cu{c:g}"].mean()) / 1e9 for c in CUS]
            ax.plot([100 * c for c in CUS], ys, "o-", lw=0.8, ms=3, label=lab)
        ax.set_yscale("log")
        ax.set_xlabel("compute utilization (%)")
        ax.set_ylabel("cross-node bandwidth needed (Gbit/s)")
        ax.set_title("the calibrated clock's answer (Table 4's question)", fontsize=9)
        ax.legend(fontsize=5)
    for a in axes:
        a.grid(alpha=0.3)
    fig.tight_layout()
    return fig
