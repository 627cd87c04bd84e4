"""The char-level GPT beside its PyTorch peer (examples/gpt_kjv.json, bench/torch_gpt_train.py).

Our results file holds the W = 1 arm (2,000 AdamW steps of 12 windows) and the W = 8 arms at the
same tokens (sync SGD averaging, local SGD H = 50), 3 seeds each; the peer script trains the
W = 1 configuration in PyTorch and writes one JSON record per seed (``--out``). This prints, per
arm: the seeds, the mean final validation loss in nats per token with its 95% Student-t
interval, bits per character (loss / ln 2), and ours minus PyTorch: the difference of the means
with a Welch interval (unequal variances, Welch-Satterthwaite degrees of freedom) and the same
as a percentage of PyTorch's mean.

The goal, fixed before the runs: ours within GOAL_PCT (2%) of PyTorch, both ways, for the arm
that is the peer's configuration (one worker). HOLDS when the relative difference's interval
lies inside [-2%, +2%], DOES NOT HOLD when it lies wholly outside, INCONCLUSIVE otherwise. The
relative interval divides the Welch interval of the difference by PyTorch's mean (its own
spread, a few 1e-3 of the mean over 3 seeds, is left out: a Fieller interval would widen it by
about that much). The W = 8 arms are compared with the same peer at the same tokens; they are
not what the goal is about (their row says so). A comparison needs the same tokens on both
sides; otherwise the verdict is NOT TESTED.

usage: /usr/bin/python3 -m psgd_analysis.gpt_peer OURS.h5 PEER.json [PEER.json ...]
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats as _st

from . import stats as st

GOAL_PCT = 2.0
LN2 = math.log(2.0)


class InputError(ValueError):
    """A bad input file: the message names it."""


def welch_interval(a: Iterable[float], b: Iterable[float],
                   level: float = st.LEVEL) -> tuple[float, float, float, float]:
    """(mean(a) - mean(b), lo, hi, df): Welch's t interval for a difference of means with
    unequal variances (Welch 1947; df by Welch-Satterthwaite). NaN bounds with fewer than two
    values on a side; two constant samples give a zero-width interval."""
    x = np.asarray([v for v in a if math.isfinite(v)], dtype=float)
    y = np.asarray([v for v in b if math.isfinite(v)], dtype=float)
    if len(x) == 0 or len(y) == 0:
        return math.nan, math.nan, math.nan, math.nan
    d = float(x.mean() - y.mean())
    if len(x) < 2 or len(y) < 2:
        return d, math.nan, math.nan, math.nan
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se2 = vx + vy
    if se2 == 0:
        return d, d, d, math.inf
    df = se2 ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    half = float(_st.t.ppf(0.5 + level / 2, df) * math.sqrt(se2))
    return d, d - half, d + half, float(df)


def decide_within(lo_pct: float, hi_pct: float, goal: float = GOAL_PCT) -> str:
    """The goal |ours - PyTorch| / PyTorch <= goal% from the relative difference's interval."""
    if not (math.isfinite(lo_pct) and math.isfinite(hi_pct)):
        return st.INCONCLUSIVE
    if -goal <= lo_pct and hi_pct <= goal:
        return st.HOLDS
    if hi_pct < -goal or lo_pct > goal:
        return st.FAILS
    return st.INCONCLUSIVE


def read_peer(paths: Sequence[str]) -> list[dict[str, Any]]:
    """One row per peer JSON (bench/torch_gpt_train.py --out): seed, step, tokens, val_loss of
    its last evaluation, and the peer's version. Every file must end at the same step."""
    rows = []
    for p in paths:
        try:
            with open(p) as f:
                rec = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise InputError(f"{p}: cannot read the peer's JSON record: {e}") from None
        evals = rec.get("evals") if isinstance(rec, dict) else None
        if not evals or not isinstance(evals, list):
            raise InputError(f"{p}: $.evals: no evaluations (was torch_gpt_train.py run with "
                             "--eval-at covering its last step?)")
        last = max(evals, key=lambda e: e.get("step", -1) if isinstance(e, dict) else -1)
        try:
            row = {"file": p, "seed": int(rec["seed"]), "step": int(last["step"]),
                   "tokens": int(last["tokens"]), "val_loss": float(last["val_loss"]),
                   "peer": str(rec.get("peer", "torch"))}
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{p}: $.seed or $.evals[-1].step/tokens/val_loss missing or not a "
                             f"number ({e})") from None
        rows.append(row)
    seeds = [r["seed"] for r in rows]
    dup = sorted({s for s in seeds if seeds.count(s) > 1})
    if dup:
        raise InputError(f"{', '.join(r['file'] for r in rows if r['seed'] in dup)}: seed "
                         f"{dup[0]} given twice")
    steps = {r["step"] for r in rows}
    if len(steps) > 1:
        raise InputError(f"{', '.join(paths)}: the peer runs end at different steps {sorted(steps)}")
    return rows


def _arm(cfg: Mapping[str, Any]) -> str:
    alg = cfg.get("algorithm", {})
    name = alg.get("name", str(alg)) if isinstance(alg, dict) else str(alg)
    extra = ""
    if isinstance(alg, dict):
        if name == "local_sgd":
            extra = f" H={alg.get('H')}"
        elif name in ("sync_sgd", "adasum") and "combine" in alg:
            extra = f" ({alg['combine']})"
    return f"W={int(cfg.get('workers', 1))} {name}{extra}"


def read_ours(path: str) -> list[dict[str, Any]]:
    """One row per run of our results file: arm, workers, seed, status, final_test_loss (NaN
    unless completed), tokens (the summary's, else samples x block)."""
    from .results import load
    try:
        res = load([path])
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"{path}: cannot read the results file: {e}") from None
    rows = []
    for _, r in res.runs.iterrows():
        cfg = r["config"]
        model = cfg.get("model", {})
        if not isinstance(model, dict) or model.get("name") != "gpt":
            raise InputError(f"{path}: run {r['run_id']}: $.model is not gpt")
        tok = r.get("tokens")
        if tok is None or (isinstance(tok, float) and math.isnan(tok)):
            tok = int(r["samples"]) * int(model.get("block", 0))
        loss = r.get("final_test_loss")
        ok = r["status"] == "completed" and loss is not None and math.isfinite(float(loss))
        rows.append({"arm": _arm(cfg), "workers": int(cfg.get("workers", 1)),
                     "seed": int(r["seed"]), "status": r["status"], "tokens": int(tok),
                     "val_loss": float(loss) if ok else math.nan})
    return rows


def table(ours: Sequence[Mapping[str, Any]], peer: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The comparison: {"rows": [...], "markdown": str}. A row per arm of ours (in the order
    they first appear), then PyTorch's. Each of ours: n, failed, mean, lo, hi, bpc, tokens,
    diff, diff_lo, diff_hi, rel_pct, rel_lo, rel_hi, verdict."""
    py = [p["val_loss"] for p in peer]
    pm, plo, phi, pn = st.t_interval(py)
    ptok = {p["tokens"] for p in peer}
    arms: dict[str, list[Mapping[str, Any]]] = {}
    for r in ours:
        arms.setdefault(r["arm"], []).append(r)
    rows = []
    for arm, rs in arms.items():
        vals = [r["val_loss"] for r in rs]
        m, lo, hi, n = st.t_interval(vals)
        toks = sorted({r["tokens"] for r in rs})
        d, dlo, dhi, _ = welch_interval(vals, py)
        pct = lambda x: 100.0 * x / pm if pn and pm else math.nan  # noqa: E731
        row = {"arm": arm, "n": n, "failed": sum(1 for r in rs if not math.isfinite(r["val_loss"])),
               "seeds": sorted(r["seed"] for r in rs), "mean": m, "lo": lo, "hi": hi,
               "bpc": m / LN2, "tokens": toks[0] if len(toks) == 1 else toks,
               "diff": d, "diff_lo": dlo, "diff_hi": dhi,
               "rel_pct": pct(d), "rel_lo": pct(dlo), "rel_hi": pct(dhi)}
        if toks != sorted(ptok):
            row["verdict"] = f"{st.NOT_TESTED} (tokens {toks} vs PyTorch's {sorted(ptok)})"
        elif all(r["workers"] == 1 for r in rs):
            row["verdict"] = decide_within(row["rel_lo"], row["rel_hi"])
        else:
            row["verdict"] = "(not the goal's arm)"
        rows.append(row)
    peer_label = peer[0]["peer"] if peer else "PyTorch"
    prow = {"arm": f"PyTorch peer ({peer_label}), W=1", "n": pn, "failed": 0,
            "seeds": sorted(p["seed"] for p in peer), "mean": pm, "lo": plo, "hi": phi,
            "bpc": pm / LN2, "tokens": sorted(ptok)[0] if len(ptok) == 1 else sorted(ptok)}

    def f(x: float, spec: str = ".4f") -> str:
        return format(x, spec) if math.isfinite(x) else "n/a"

    md = [f"Final validation loss (nats per token), 95% Student-t interval over seeds; "
          f"ours minus PyTorch with a Welch interval. Goal: the one-worker arm within "
          f"{GOAL_PCT:g}% of PyTorch (HOLDS when the relative interval lies inside "
          f"+-{GOAL_PCT:g}%).", "",
          "| arm | n (failed) | tokens | val loss [95% CI] | bpc | ours - PyTorch [95% Welch] "
          "| relative % [95%] | verdict |",
          "| --- | ---: | ---: | --- | ---: | --- | --- | --- |"]
    for r in rows:
        md.append(f"| {r['arm']} | {r['n']} ({r['failed']}) | {r['tokens']} | "
                  f"{f(r['mean'])} [{f(r['lo'])}, {f(r['hi'])}] | {f(r['bpc'])} | "
                  f"{f(r['diff'], '+.4f')} [{f(r['diff_lo'], '+.4f')}, {f(r['diff_hi'], '+.4f')}] | "
                  f"{f(r['rel_pct'], '+.2f')} [{f(r['rel_lo'], '+.2f')}, {f(r['rel_hi'], '+.2f')}] | "
                  f"{r['verdict']} |")
    md.append(f"| {prow['arm']} | {prow['n']} (0) | {prow['tokens']} | "
              f"{f(prow['mean'])} [{f(prow['lo'])}, {f(prow['hi'])}] | {f(prow['bpc'])} | | | |")
    return {"rows": rows, "peer": prow, "markdown": "\n".join(md)}


def main(argv: Sequence[str]) -> int:
    if len(argv) < 3 or not argv[1].endswith(".h5"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        t = table(read_ours(argv[1]), read_peer(argv[2:]))
    except InputError as e:
        print(f"gpt_peer: {e}", file=sys.stderr)
        return 2
    print(t["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
