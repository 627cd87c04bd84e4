"""Where simulated time goes: sim_s split into compute, communication and waiting on
stragglers (DESIGN.md section 12; the workbench writes the split into /summary as
sim_compute_s, sim_comm_s, sim_wait_s, and into a --timeline trace's otherData.runs).

usage: /usr/bin/python3 -m psgd_analysis.time_breakdown RESULTS.h5|RUN.trace.json OUT.png
"""
from __future__ import annotations

import json
import sys
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PARTS = (("compute", "sim_compute_s", "#4c72b0"), ("communication", "sim_comm_s", "#dd8452"),
         ("waiting on stragglers", "sim_wait_s", "#c44e52"))


def read_breakdown(path: str) -> list[dict[str, Any]]:
    """One dict per run: id, sim_s, sim_compute_s, sim_comm_s, sim_wait_s (seconds)."""
    if path.endswith(".json"):
        with open(path) as f:
            runs = json.load(f)["otherData"]["runs"]
        return [{"id": r["id"], "sim_s": r["sim_s"], "sim_compute_s": r["compute_s"],
                 "sim_comm_s": r["comm_s"], "sim_wait_s": r["wait_s"]} for r in runs]
    import h5py
    with h5py.File(path, "r") as f:
        s = f["summary"][:]
        names = s.dtype.names
        missing = [k for _, k, _ in PARTS if k not in names]
        if missing:
            raise ValueError(f"{path}: /summary has no {', '.join(missing)} "
                             "(written by a workbench older than the cost-model breakdown)")
        return [{"id": r["id"].decode() if isinstance(r["id"], bytes) else str(r["id"]),
                 "sim_s": float(r["sim_s"]), **{k: float(r[k]) for _, k, _ in PARTS}} for r in s]


def plot(runs: list[dict[str, Any]], title: str = "") -> Any:
    """Horizontal stacked bars, one per run, in simulated seconds."""
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(runs) + 1.4))
    y = list(range(len(runs)))
    left = [0.0] * len(runs)
    for label, key, color in PARTS:
        vals = [max(0.0, r[key]) for r in runs]
        ax.barh(y, vals, left=left, color=color, label=label)
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(y, [r["id"] for r in runs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("simulated seconds")
    ax.set_title(title or "sim_s breakdown")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        runs = read_breakdown(argv[1])
    except (OSError, KeyError, ValueError) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 2
    fig = plot(runs, title=f"sim_s breakdown: {argv[1].rsplit('/', 1)[-1]}")
    fig.savefig(argv[2], dpi=120)
    for r in runs:
        print(f"{r['id']}: sim_s {r['sim_s']:.6g} = compute {r['sim_compute_s']:.6g} + comm "
              f"{r['sim_comm_s']:.6g} + wait {r['sim_wait_s']:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
