"""R4 of DESIGN.md section 11 (adasum-latency): Adasum collective latency against
MPI_Allreduce(sum) (Adasum MLSys 5.1.1 Fig. 1; arXiv 4.2.3 Fig. 4). Reads the output of
bench/bench_collectives.cpp (independent repetitions in one file, the make rule's
REP_MARK between them); latency() returns a Report.
"""
from __future__ import annotations

import math
import os
import re
from typing import Sequence

import numpy as np
import pandas as pd

from . import figures, paper
from . import stats as st
from .report import Report


_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s*\|(.*)\|\s*([0-9.]+)\s*$")


def parse_bench_collectives(text: str) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """Parse bench/bench_collectives.cpp's part-1 table and RESULT line."""
    rows, result, header = [], {}, []
    part1 = True
    for line in text.splitlines():
        if line.startswith("# in-process"):
            part1 = False
        if line.startswith("#") and part1:
            header.append(line)
        if line.startswith("RESULT"):
            result = dict(kv.split("=", 1) for kv in line.split()[1:])
        m = _ROW.match(line)
        if part1 and m:
            cells = [c.split() for c in m.group(3).split("|")]
            rows.append({"bytes": int(m.group(1)), "count": int(m.group(2)),
                         "mpi_us": float(cells[0][0]), "wb_sum_us": float(cells[1][0]),
                         "wb_adasum_us": float(cells[2][0]),
                         "mpi_busbw_GBs": float(cells[0][2]), "adasum_busbw_GBs": float(cells[2][2]),
                         "wrong": int(cells[0][3]) + int(cells[1][3]) + int(cells[2][3]),
                         "adasum_over_mpi": float(m.group(4))})
    f = pd.DataFrame(rows)
    if len(f):
        f["sum_over_mpi"] = f["wb_sum_us"].to_numpy() / f["mpi_us"].to_numpy()
    return f, result, header


REP_MARK = "# repetition "  # the make rule's separator between independent benchmark processes
# Up to this size Adasum swaps whole buffers in one round (comm/collectives_rvhdd.cpp kWholeBytes)
# while the sum runs reduce-scatter then allgather: the two schedules differ, so "Adasum against
# the same schedule's sum" is decided above it only.
R4_WHOLE_BYTES = 32 << 10


def split_repetitions(text: str) -> list[str]:
    """The benchmark outputs of the independent repetitions in one file (the make rule runs
    bench_collectives several times, each after a line '# repetition k'); a file without the
    marker is one repetition."""
    parts, cur = [], []
    for line in text.splitlines():
        if line.startswith(REP_MARK):
            if cur:
                parts.append("\n".join(cur))
            cur = []
            continue
        cur.append(line)
    if cur:
        parts.append("\n".join(cur))
    return [p for p in parts if any(_ROW.match(ln) for ln in p.splitlines())]


def latency_ratios(reps: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Per size, over the repetitions: the median times, and each repetition's Adasum / own
    sum and Adasum / MPI_Allreduce ratios (lists, one value per repetition)."""
    rows = []
    sizes = sorted(set.intersection(*[set(int(b) for b in t["bytes"]) for t in reps])) if reps else []
    for b in sizes:
        sub = [t[t["bytes"] == b].iloc[0] for t in reps]
        rows.append({"bytes": b,
                     "mpi_us": float(np.median([r["mpi_us"] for r in sub])),
                     "wb_sum_us": float(np.median([r["wb_sum_us"] for r in sub])),
                     "wb_adasum_us": float(np.median([r["wb_adasum_us"] for r in sub])),
                     "wrong": int(sum(int(r["wrong"]) for r in sub)),
                     "over_sum": [float(r["wb_adasum_us"]) / float(r["wb_sum_us"]) for r in sub],
                     "over_mpi": [float(r["wb_adasum_us"]) / float(r["mpi_us"]) for r in sub],
                     "sum_over_mpi_reps": [float(r["wb_sum_us"]) / float(r["mpi_us"]) for r in sub]})
    f = pd.DataFrame(rows)
    if len(f):
        f["adasum_over_mpi"] = f["wb_adasum_us"] / f["mpi_us"]
        f["sum_over_mpi"] = f["wb_sum_us"] / f["mpi_us"]
    return f


def latency(bench_txt: str, elapsed_s: float | None = None) -> Report:
    """R4: Adasum (RVHDD) latency per message size against the same implementation's sum (the
    baseline that shares its transport and schedule) and against MPICH's MPI_Allreduce, over
    independent repetitions of the benchmark."""
    with open(bench_txt) as fh:
        text = fh.read()
    parsed = [parse_bench_collectives(t) for t in split_repetitions(text)]
    reps = [p[0] for p in parsed if len(p[0])]
    result = parsed[-1][1] if parsed else {}
    rep = Report("adasum-latency", "R4: Adasum collective latency vs MPI_Allreduce",
                 sources=[paper.R4_SOURCE])
    rep.inputs = [bench_txt, "build/bench_collectives"]
    if elapsed_s is not None:
        rep.runtime = {"benchmark": f"{elapsed_s / 60:.1f} min ({len(reps)} repetitions, mpirun -n 2)"}
    if not reps:
        raise SystemExit(f"{bench_txt}: no benchmark rows found")
    tab = latency_ratios(reps)
    n = len(reps)
    lim = 1 + paper.R4_MAX_OVERHEAD
    wrong = int(tab["wrong"].sum())
    pos = (0.0, math.inf)  # a ratio of times
    ci_sum = [st.t_interval(v, bounds=pos) for v in tab["over_sum"]]
    ci_mpi = [st.t_interval(v, bounds=pos) for v in tab["over_mpi"]]
    ci_smpi = [st.t_interval(v, bounds=pos) for v in tab["sum_over_mpi_reps"]]
    # One meaning per column: times are medians over the repetitions, ratios the mean of the
    # repetitions' ratios with its interval.
    out = pd.DataFrame({"bytes": tab["bytes"], "mpi_us_median": tab["mpi_us"],
                        "wb_sum_us_median": tab["wb_sum_us"], "wb_adasum_us_median": tab["wb_adasum_us"]})
    for name, ci in (("adasum_over_sum", ci_sum), ("adasum_over_mpi", ci_mpi), ("sum_over_mpi", ci_smpi)):
        out[name + "_mean"] = [c[0] for c in ci]
        out[name + "_lo"] = [c[1] for c in ci]
        out[name + "_hi"] = [c[2] for c in ci]
    out["wrong"] = tab["wrong"]
    out["repetitions"] = n
    rep.data(out)
    # The paper's claim as it reads: 64 GPUs on 16 nodes, six RVHDD levels, against NCCL. Kept
    # as the claim's text so that the catalog's rule says why two ranks cannot decide it.
    # What the data alone say against this run's baseline (MPICH): below 1.45 at every size
    # (intersection-union, Holm for the other side) and faster (interval below 1) at some size.
    over_mpi_max = max(c[0] for c in ci_mpi)
    v_over = st.combine_cells([list(v) for v in tab["over_mpi"]], lim, "below") if n > 1 else st.INCONCLUSIVE
    faster_n = sum(1 for c in ci_mpi if np.isfinite(c[2]) and c[2] < 1.0)
    v_mpi = (st.HOLDS if v_over == st.HOLDS and faster_n else st.FAILS if v_over == st.FAILS else st.INCONCLUSIVE)
    rep.claim_verdict(
        "Adasum's overhead over the baseline allreduce is below 45% (and it is sometimes faster) (MLSys 5.1.1, Fig. 1)",
        v_mpi,
        f"at one level against MPICH: Adasum / MPI_Allreduce mean over {n} repetitions "
        f"{min(c[0] for c in ci_mpi):.2f}-{over_mpi_max:.2f} across sizes; faster (interval below 1) at {faster_n} "
        f"of {len(ci_mpi)} sizes")
    # The same question at the scale the machine has: one RVHDD level (2 ranks), against the
    # allreduce that shares Adasum's transport and schedule (the two passes over the buffer and
    # the dot products are what Adasum adds: MLSys 5.1.1 'Adasum requires two passes').
    big = [i for i in range(len(tab)) if int(tab["bytes"].iloc[i]) > R4_WHOLE_BYTES]
    cells = [list(tab["over_sum"].iloc[i]) for i in big]
    v = st.combine_cells(cells, lim, "below") if n > 1 and wrong == 0 and cells else st.INCONCLUSIVE
    worst = max(big, key=lambda i: ci_sum[i][0]) if big else 0
    lo_b = int(tab["bytes"].iloc[big[0]]) if big else 0
    rep.claim_verdict(
        f"Ablation (the workbench's own check, not the paper's setting): at one RVHDD level (2 ranks, shared memory), "
        f"Adasum takes less than {lim:.2f}x the time of the same "
        f"implementation's allreduce (sum) over the same RVHDD schedule, at every size above {R4_WHOLE_BYTES // 1024} KB "
        "(64 KB to 64 MB, where the two share that schedule; below it Adasum takes a one-round whole-buffer path the "
        "sum has no counterpart for), every element right",
        v,
        f"Adasum / own sum per size, mean [95% interval over {n} repetitions]: worst "
        f"{st.fmt_ci(*ci_sum[worst][:3], '.3f')} at {int(tab['bytes'].iloc[worst])} B; "
        f"{sum(1 for i in big if np.isfinite(ci_sum[i][2]) and ci_sum[i][2] < lim)}/{len(big)} sizes from {lo_b} B "
        f"with the interval below {lim:.2f}; wrong elements {wrong} (all sizes)")
    rep.section("Setup")
    rep.text(f"`mpirun -n 2 build/bench_collectives`, {n} times (independent processes; the make rule runs them one "
             "after another): 2 ranks on one 2-core machine (shared "
             "memory, MPICH), one logical worker per rank, fp32 buffers fused from 64 tensors of "
             "uneven size (arXiv 4.2.3 fuses '64 tensors'; the uneven sizes are the workbench's); within a "
             "repetition, time = best of the interleaved "
             "repetitions, slowest rank; across repetitions, the median time and the mean ratio with a "
             f"Student-t 95% interval over the {n} repetitions. Two baselines: the workbench's own allreduce "
             "(sum) over the same transport and, above 32 KB, the same RVHDD message schedule, which isolates what "
             "Adasum adds there (the dot products and norms, a second pass over the buffer); up to 32 KB the two "
             "schedules differ (Adasum: whole buffers, one round; the sum: reduce-scatter then allgather, two "
             "rounds), so those sizes are shown but decide nothing; and MPICH's "
             "MPI_Allreduce(MPI_SUM), a tuned library as the paper's NCCL is, whose own algorithm choice moves the "
             "ratio by size. With 2 ranks the recursive vector-halving distance-doubling has a single level. "
             "Adasum's buffers up to 32 KB take recursive doubling instead (each rank swaps its whole buffer, in "
             "messages of at most 8 KB, and computes the node itself: one round per level); "
             "larger ones take RVHDD, with its halving points on tensor boundaries where they "
             "fall within a small shift, which saves Algorithm 1's allreduce of the per-tensor "
             "dot products (line 17), else with that allreduce.")
    # Measurement quality: MPICH busy-polls, so other processes on the cores turn
    # microseconds into scheduler time slices. Flag sizes slower than a 4x larger size.
    t = tab["mpi_us"].to_numpy(dtype=float)
    disturbed = [int(tab["bytes"].iloc[i]) for i in range(len(t) - 1) if np.any(t[i] > 2 * t[i + 1:])]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    if disturbed:
        rep.text(f"**Measurement disturbed**: the median MPI_Allreduce took longer at {len(disturbed)} sizes "
                 f"({', '.join(str(b) for b in disturbed)} B) than at a larger size, the signature of "
                 f"other processes competing for the 2 cores (1-min load average {load:.1f} when the "
                 "report was written). Re-run `make -f Makefile.experiments adasum-latency` on an "
                 "idle machine before drawing conclusions from those rows.")
    rep.section("Time per op (us, median over the repetitions) and ratios per size")
    show = pd.DataFrame({
        "bytes": tab["bytes"], "mpi_us": tab["mpi_us"], "wb_sum_us": tab["wb_sum_us"],
        "wb_adasum_us": tab["wb_adasum_us"],
        "adasum / own sum": [st.fmt_ci(*c[:3], ".3f") for c in ci_sum],
        "adasum / MPI": [st.fmt_ci(*c[:3], ".3f") for c in ci_mpi],
        "own sum / MPI": [st.fmt_ci(*c[:3], ".3f") for c in ci_smpi],
        "wrong": tab["wrong"]})
    rep.table(show, floatfmt={"mpi_us": ".1f", "wb_sum_us": ".1f", "wb_adasum_us": ".1f"})
    rep.text(f"Paper: overhead < {paper.R4_MAX_OVERHEAD:.0%}, up to {paper.R4_BEST_SPEEDUP:.0%} "
             "faster, sizes up to 256 MB (ratio band 0.85-1.45), 64 GPUs against NCCL.  ")
    rep.section("Against MPICH, and the small messages")
    b_ = tab["bytes"].to_numpy()
    r = tab["adasum_over_mpi"].to_numpy(dtype=float)
    smpi = tab["sum_over_mpi"].to_numpy(dtype=float)
    extra = tab["wb_adasum_us"].to_numpy(dtype=float) - tab["wb_sum_us"].to_numpy(dtype=float)
    small = b_ <= 16384
    faster = [int(b_[i]) for i in range(len(r)) if r[i] <= 1.0]
    slow_mpi = [int(b_[i]) for i in range(len(smpi)) if smpi[i] < 1 / 1.5]
    below_sum = [int(b_[i]) for i, c in enumerate(ci_sum) if np.isfinite(c[2]) and c[2] < 1.0]
    rep.text(
        "Adasum does more arithmetic than a sum of the same bytes (the dot products and norms of the two "
        "children before it can combine them, arXiv 4.2.3). "
        + (f"Where its interval against our sum lies below 1 ({', '.join(str(x) for x in below_sum)} B) the two "
           "take different message schedules (Adasum's whole-buffer recursive doubling up to 32 KB, one round per "
           "level), not less work. " if below_sum else "")
        + "Where Adasum is faster than MPI_Allreduce, MPICH's own allreduce is the slower one (at 32 and 64 MB "
        "MPICH's MPI_Allreduce runs far below the memory's bandwidth here, a large-message behaviour of this MPICH "
        "build, not of Adasum): "
        + (f"at {', '.join(str(x) for x in slow_mpi)} B our sum takes less than two thirds of MPI_Allreduce's time. "
           if slow_mpi else "no size here has MPI_Allreduce much slower than our sum. ")
        + f"Adasum's median time is at or below MPI_Allreduce's at {len(faster)} of {len(r)} sizes"
        + (f" ({', '.join(str(x) for x in faster)} B)" if faster else "") + ". "
        "Up to 32 KB Adasum's ranks swap whole buffers in one round (the sum takes two) and each computes every "
        "tensor's three dot products, its coefficients and the combination in double: "
        f"{np.median(extra[small]) if small.any() else math.nan:.1f} us over our sum's time "
        f"(median over the sizes <= 16 KB) against a latency-bound MPI_Allreduce of {float(t[0]):.1f} us at "
        f"{int(b_[0])} B. The pair of cores runs a small message in one of two states (the benchmark's header): "
        "MPI_Allreduce at 4 KB per repetition, "
        + ", ".join(f"{float(x[x['bytes'] == int(b_[0])]['mpi_us'].iloc[0]):.1f}" for x in reps)
        + " us; a repetition in the other state widens the small sizes' intervals.")
    if result:
        rep.text("Benchmark RESULT line (the last repetition): `RESULT "
                 + " ".join(f"{k}={v}" for k, v in result.items()) + "`")
    rep.figure(figures.latency(tab, paper.R4_MAX_OVERHEAD))
    return rep
