"""R1 stage 0: the training budget derived on our data by the Adasum paper's own rule.

Adasum arXiv 5.4: "The maximum accuracy of LeNet-5 on MNIST is in the 99.3%-99.4% range. Using
99.3% as our target accuracy, [...] the following configuration reliably reaches the target accuracy
in sequential training in 2 epochs (while no reliable configuration was found for 1.75 epochs)":
epochs, max LR and warm-up searched together for the shortest schedule whose sequential run reliably
reaches the low end of the net's maximum accuracy.

The 2 epochs are MNIST's answer. On Fashion-MNIST the same rule is applied to our own runs
(experiments/adasum/lenet_budget.json, lenet_budget_ceiling.json, lenet_budget_ceiling64.json), fixed
before they ran:
- the ceiling: LeNet-5 trained sequentially for the longest budget of the ceiling file (the same 17%
  warm-up and linear decay to zero) at each LR of its grid; the LR with the highest seed-mean final validation accuracy; the
  net's maximum accuracy range is its seeds' range there, and the target is that range's low end
  (the paper's 99.3% in a 99.3%-99.4% range);
- a budget of E epochs reliably reaches the target when, at the LR with the highest seed-mean
  validation accuracy at E, every seed ends at or above it;
- the budget is the shortest such E among the budget file's (2, 4, 8, 16) and the ceiling file's shorter
  ones; the ceiling's own budget when none does (then the budget lies between the grid's next-shorter
  length and the ceiling's, and a longer ceiling may move the target).
The ceiling file first ran 32 epochs; 64 were added when no shorter budget reached 32's low end, to
check that 32 is not still below the net's maximum.
The warm-up fraction stays the paper's 17% (searched on MNIST with the epochs, not re-searched here).
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from . import stats as st

#: the budget the grid falls back to when no ceiling length is known: the ceiling's own runs reach its
#: low end by construction
CEILING_EPOCHS = 32.0


def ceiling(vals: Mapping[float, Sequence[float]]) -> tuple[float, float, float]:
    """(best LR, low end, high end) of the maximum accuracy range: at the LR with the highest
    seed-mean validation accuracy (ties: the smaller LR), the seeds' lowest and highest accuracy."""
    lr = st.best_mean_key(vals)
    if not np.isfinite(lr):
        return math.nan, math.nan, math.nan
    v = [float(x) for x in vals[lr]]
    return float(lr), min(v), max(v)


def reaches(vals: Mapping[float, Sequence[float]], target: float) -> tuple[float, bool]:
    """(the budget's best LR, whether every seed there ends at or above the target)."""
    lr = st.best_mean_key(vals)
    if not np.isfinite(lr):
        return math.nan, False
    return float(lr), all(float(x) >= target for x in vals[lr])


def choose_budget(by_epochs: Mapping[float, Mapping[float, Sequence[float]]],
                  ceiling_vals: Mapping[float, Sequence[float]],
                  ceiling_epochs: float = CEILING_EPOCHS) -> tuple[float, float, dict]:
    """The shortest budget (epochs) that reliably reaches the ceiling's low end, that budget's best
    LR, and per budget (best LR, reached) for the report. `by_epochs[E][lr]` and `ceiling_vals[lr]`
    are final validation accuracies per seed, a diverged run already 0."""
    _, target, _ = ceiling(ceiling_vals)
    table = {float(e): reaches(v, target) for e, v in sorted(by_epochs.items())}
    for e, (lr, ok) in table.items():
        if ok:
            return e, lr, table
    lr, _, _ = ceiling(ceiling_vals)
    return float(ceiling_epochs), lr, table


def _vals(path: str) -> dict[float, dict[float, list[float]]]:
    """{epochs: {lr: [final validation accuracy per seed]}} of one results file, a diverged or
    unfinished run counted as 0 (a selection rule's input)."""
    from .results import load
    out: dict[float, dict[float, list[float]]] = {}
    for _, r in load([path]).runs.iterrows():
        v = r.get("final_val_accuracy")
        ok = v is not None and np.isfinite(float(v)) and r["status"] == "completed"
        out.setdefault(float(r["config"]["epochs"]), {}).setdefault(float(r["lr"]), []).append(float(v) if ok else 0.0)
    return out


def derive(budget_path: str, *ceiling_paths: str) -> list[str]:
    """The derivation as markdown lines: the ceiling, each budget's best LR and its seeds, the choice.
    The ceiling is the longest budget in the ceiling files; their shorter ones are candidates too."""
    by_e = _vals(budget_path)
    ceil_all: dict[float, dict[float, list[float]]] = {}
    for p in ceiling_paths:
        for e_, v in _vals(p).items():
            ceil_all.setdefault(e_, {}).update(v)
    top = max(ceil_all)
    cvals = ceil_all[top]
    by_e.update({e_: v for e_, v in ceil_all.items() if e_ != top})  # the ceiling files' shorter runs
    clr, lo, hi = ceiling(cvals)
    e, lr, table = choose_budget(by_e, cvals, top)
    md = [f"Ceiling ({top:g} epochs, {', '.join(f'`{p}`' for p in ceiling_paths)}): best LR {clr:g}, seeds "
          f"{', '.join(f'{100 * x:.2f}' for x in cvals[clr])}% validation accuracy: the maximum accuracy range "
          f"{100 * lo:.2f}%-{100 * hi:.2f}%, target its low end **{100 * lo:.2f}%**.", "",
          "| epochs | best LR | seed-mean val acc % | seeds val acc % | every seed >= target |",
          "| ---: | ---: | ---: | --- | --- |"]
    for ep, (blr, ok) in table.items():
        v = by_e[ep][blr]
        md.append(f"| {ep:g} | {blr:g} | {100 * np.mean(v):.2f} | {', '.join(f'{100 * x:.2f}' for x in v)} | "
                  f"{'yes' if ok else 'no'} |")
    md += ["", f"Budget: **{e:g} epochs** at max LR {lr:g} " + ("(the shortest that reliably reaches the target)."
           if e != top else "(no shorter budget of the grid reaches the target, which the ceiling's own runs reach by "
           "construction: the budget is above the grid's next-shorter length, the ceiling's at its resolution).")]
    return md


if __name__ == "__main__":
    import sys
    print("\n".join(derive(sys.argv[1], *sys.argv[2:])))
