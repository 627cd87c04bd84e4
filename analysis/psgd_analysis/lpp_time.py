"""How the LPP plateau reports (R7, R8 of DESIGN.md section 11) treat time: the main runs'
simulated time repriced from lpp_plateau_time's runs of each cell on a cost profile (reprice,
with its checks), what priced the runs (clock_name) and the report's paragraph on time
(time_note; docs/validation.md says how far the clocks are trusted).
"""

import numpy as np

from .lpp import METHOD, role


def _time_key(r):
    """A cell's identity for its time: what the simulated clock sees (the LR and the seed do not move it)."""
    return (r["algo"], r["U"], r["B"], r["H"], r["switch_at"], r["mode"], r["opt"])


def _epoch_clock(r):
    """(epochs, simulated seconds) along run r's logged rows, from (0, 0)."""
    c = r["curves"]
    e = np.concatenate([[0.0], c["epoch"].to_numpy(dtype=float)])
    t = np.concatenate([[0.0], c["sim_s"].to_numpy(dtype=float)])
    ok = np.isfinite(e) & np.isfinite(t)
    return e[ok], t[ok]


def time_profiles(runs):
    """The profiles lpp_plateau_time's runs were priced by (what reprice puts on the main runs)."""
    return sorted({str((r["config"].get("clock") or {}).get("profile", "")) for r in runs if role(r) == "time"} - {""})


def reprice(runs):
    """Every main run's simulated time from lpp_plateau_time's runs of its cell on the profile.

    The plateau's MB/PL-SGD and LAP-SGD runs were made on a hand-set clock (their numerics do not
    depend on it: tests/unit/test_lap_lpp.cpp), LPP-SGD's on the profile itself. lpp_plateau_time
    runs each cell with the recipe scaled to E_T epochs; the recipe's phases scale with the budget,
    so the main run's time at epoch e is (E / E_T) x t_T(e E_T / E). Sets sim_s, ev_sim (and keeps
    the spec's own as sim_s_spec, ev_sim_spec) and returns the check lines: the budget-scaling cell
    (one cell run at two budgets) and the runs already on the profile (their own sim_s against the
    repriced one). Without time runs it changes nothing and returns []."""
    timed = [r for r in runs if role(r) == "time" and r["status"] == "completed"]
    if not timed:
        return []
    by_key = {}
    for r in timed:
        by_key.setdefault(_time_key(r), []).append(r)
    ref = {k: min(v, key=lambda r: float(r["epochs"])) for k, v in by_key.items()}
    prof = {str(r["config"].get("clock", {}).get("profile", "")) for r in timed}
    L = []
    for k, v in by_key.items():  # the scaling check: one cell at two budgets, time per epoch
        if len(v) > 1:
            a, b = sorted(v, key=lambda r: float(r["epochs"]))[:2]
            pa, pb = a["sim_s"] / float(a["epochs"]), b["sim_s"] / float(b["epochs"])
            L.append("- Budget scaling: {} U={} B_loc {} takes {:.6f} simulated s per epoch at {:g} epochs and {:.6f} "
                     "at {:g} ({:+.3%}).".format(METHOD.get(k[0], k[0]), k[1], k[2], pa, float(a["epochs"]), pb,
                                                 float(b["epochs"]), pb / pa - 1))
    same, unpriced = [], []
    for r in runs:
        if role(r) != "main":
            continue
        if _time_key(r) not in ref:
            unpriced.append(r)
            continue
        t = ref[_time_key(r)]
        et, tt = _epoch_clock(t)
        E, ET = float(r["epochs"]), float(t["epochs"])
        ev_e = r["ev_epoch"]  # the evaluations load_runs kept (a collapsed run's end at chance is cut)
        last = float(r["curves"]["epoch"].to_numpy(dtype=float)[-1]) if len(r["curves"]) else E

        def at(e):
            return (E / ET) * np.interp(np.asarray(e, dtype=float) * ET / E, et, tt)
        new = float(at(last))
        if str(r["config"].get("clock", {}).get("profile", "")) in prof:
            same.append(new / r["sim_s"] - 1 if r["sim_s"] else float("nan"))
        r.update({"sim_s_spec": r["sim_s"], "ev_sim_spec": r["ev_sim"], "sim_s": new, "ev_sim": at(ev_e),
                  "priced_by": t["file"]})
    if unpriced:  # their time is their own spec's clock: said, never mixed in silently
        L.append("- **{} main run(s) have no cell in lpp_plateau_time** ({}): their simulated time is their own "
                 "spec's clock, not the profile's.".format(len(unpriced), "; ".join(sorted({
                     "{} U={} B_loc {} H={} P={}".format(METHOD.get(r["algo"], r["algo"]), r["U"], r["B"], r["H"],
                                                         r["switch_at"]) for r in unpriced}))))
    if same:
        L.append("- The runs made on the profile itself ({}): their own simulated time against the repriced one, "
                 "{:+.3%} to {:+.3%} (n = {}).".format(", ".join(sorted(p for p in prof if p)),
                                                       float(np.nanmin(same)), float(np.nanmax(same)), len(same)))
    return L


#: how the plateau reports treat time (docs/validation.md)
TIME_NOTE = ("Time: the simulated clock is the specs' assumed GPU-like device (hand-set, not calibrated: "
             "calib/reference-2core.json profiles this 2-core CPU's sync, Adasum and local-SGD steps, not the overlap "
             "of LAP/LPP updaters on a GPU, so it cannot decide a GPU claim), so every time claim is decided by the "
             "cost model (BY CONSTRUCTION); real mode is not run (4-6 updater threads per worker on 2 shared cores "
             "cannot show GPU overlap).")


def clock_name(runs):
    """What priced the main runs' sim_s: the profile a spec names, else the hand-set formula."""
    profs = sorted({str((r["config"].get("clock") or {}).get("profile", "")) for r in runs if role(r) == "main"})
    profs = [p for p in profs if p]
    if profs:
        return "the measured cost profile `{}`".format("`, `".join(profs))
    return "the specs' assumed GPU-like cost model (hand-set)"


def time_note(price, profiles=()):
    """The time paragraph of a plateau report: TIME_NOTE, or, when lpp_plateau_time repriced the runs (reprice's
    check lines in `price`; the profiles its runs name), what prices them now."""
    if not price:
        return TIME_NOTE
    return ("Time: every run's simulated time is priced by `" + "`, `".join(profiles or ["?"]) + "` through "
            "`experiments/lpp/lpp_plateau_time.json`, which runs each cell with the recipe scaled to a short budget (the "
            "phases scale with it, so the time per epoch is the main run's; checked below). The shipped one, "
            "calib/lpp-gpu-h200.json, is an H200's measured LeNet-5 costs (calibrate --device cuda): the fixed cost per batch as measured (0.65-0.92 ms "
            "of launches and host staging, overlapped by concurrent updaters), the per-sample cost scaled by FLOPs "
            "to lenet5_classic (an assumption: no GPU run of this model was calibrated), the links as measured. "
            "The main runs' numerics do not depend on the clock for MB/PL-SGD (synchronous) and LAP-SGD (identical "
            "updaters in the same regime of the cycle: tests/unit/test_lap_lpp.cpp); LPP-SGD's main runs were made "
            "on the profile itself. Time claims follow from the cycle max(L + b, U b) with these L and b (BY "
            "CONSTRUCTION where the catalog says so); real mode is not run (4-6 updater threads per worker on 2 "
            "shared cores cannot show GPU overlap).\n\n" + "\n".join(price))
