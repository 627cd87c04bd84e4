#!/usr/bin/python3
"""Write the R7/R8 plateau-protocol specs (Chatterjee et al., arXiv:2203.06638 Tables 1, 3, 4 with
Table 13's recipe scaled to the budget) from two measured choices, so that every number in them
follows from those two:

  E       the main budget in epochs: the training-accuracy plateau that experiments/lpp/lpp_plateau_probe.json
          measures (psgd_analysis/lpp_plateau.py probe_check states the rule and checks it in the reports)
  alpha0  per family (DP = MB-SGD/PL-SGD at B_loc 128, DP1024 = the same at B_loc 1024, LAP, LPP): the
          choice of experiments/lpp/lpp_plateau_select.json on the validation split (lpp_plateau.py select_check
          states the rule and checks it)
  model   lenet5_classic by default (no dropout: it can fit its training set, as the paper's protocol
          needs); --model lenet5 writes the Horovod LeNet-5 specs of the first probe

usage: scripts/lpp_plateau_specs.py [--epochs 40] [--alpha0 '{"dp": 0.01, "dp1024": 0.01, "lap": 0.01, "lpp": 0.01}']
                                    [--probe-epochs 40 20] [--select-epochs 10] [--model lenet5_classic]
                                    [--out experiments/lpp]

Writes lpp_plateau_probe.json, lpp_plateau_select.json, lpp_table1_plateau_{dp,lap,lpp}.json,
lpp_frequency_plateau_k.json, lpp_plateau_time.json (every cell's time on the profile), and Table 9's lpp_plateau_select_lars.json,
lpp_table9_plateau.json and lpp_table9_plateau_ablation.json (the latter at the paper's alpha0 0.1)
(alpha0 key "lars1024": until its selection has run, the paper's 0.1). The probe runs at the selection's alpha0 too (the selection runs
first); its budgets are --probe-epochs (the first for every family, the others for MB-SGD 128 and LAP U = 6;
a single budget E when the E/2 runs are an earlier probe's, experiments/lpp/lpp_plateau_probe_<E/2>.json).
A rewritten spec whose run configs changed must be run with --force (--resume refuses it, naming
the first difference). experiments/lpp/README.md has the whole procedure. The committed choice is
catalog.LPP_PLATEAU_SPECS's arguments: make writes the specs from them (they are git-ignored).
"""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLOCK = {"flops_per_s": 2e12, "batch_latency_s": 3e-4, "intra_latency_s": 2e-5,
         "intra_bandwidth_bytes_per_s": 1e10, "latency_s": 2e-5, "bandwidth_bytes_per_s": 1e10}
# LPP-SGD's main runs and the time spec (lpp_plateau_time) are priced by a profile (issue: the LPP targets run
# on a profile measured or taken from published figures, each parameter cited): the H200's measured LeNet-5
# costs, per-sample scaled by FLOPs to lenet5_classic (calib/lpp-gpu-h200.json says how). The other stages keep
# CLOCK: their runs were made with it, and their numerics do not depend on the clock (sync SGD's by
# construction; LAP-SGD's simulated mode with identical updaters gives the same bits under CLOCK, 2x its latency,
# half its rate and the profile, tests/unit/test_lap_lpp.cpp), so only their sim_s would change, and the
# reports take every time from lpp_plateau_time instead. LPP-SGD's blocks cost different amounts, so its event
# order, and with it its numerics, follows the clock: its main runs use the profile itself.
PROFILE = "calib/lpp-gpu-h200.json"
# The time spec's budget: the recipe scales with E (K switch at E/2, T_st at E/6, milestones), so a run's simulated
# time per epoch does not depend on E; the report checks that on one cell run at both E_TIME and 2 x E_TIME.
E_TIME = 8.0
SEEDS = [1, 2, 3, 4, 5]
# alpha0 grid of the selection stage: x1, x2, x4, x8 of Table 13's ratio prior 0.01 (at 0.01 a 40-epoch MB-SGD
# run still underfits: training loss 0.35)
GRID = (0.01, 0.02, 0.04, 0.08)
# MB-SGD at B_loc 1024 is its own family (its peak LR is alpha0 x 16 by the paper's linear scaling): the
# first probe found that the B_loc 128 choice (0.04, peak 0.64) stays at chance for 40 epochs on LeNet-5,
# so "large batch loses" would hold by divergence. Its grid reaches one step lower.
GRID_1024 = (0.005, 0.01, 0.02, 0.04)
# A choice at the lower edge of its grid is extended downward (the rule flags edge choices): on LeNet-5
# classic LAP and LPP chose 0.01 and DP1024 0.005, the lowest values, so their grids go two steps lower.
GRIDS = {"dp": GRID, "dp1024": (0.00125, 0.0025) + GRID_1024, "lap": (0.0025, 0.005) + GRID,
         "lpp": (0.0025, 0.005) + GRID}
# Table 9 (MB-SGD and PL-SGD with LARS, eta = 0.001, at B_loc 1024; the paper's alpha0 = 0.1 scaled x B_loc Q/128):
# LARS's step is lr x eta ||w|| / ||g|| per tensor, so plain SGD's alpha0 does not carry to it; its own family,
# a grid x4 around the paper's 0.1, extended to x32 (2026-11-29: the first grid's accuracy rose monotonically
# to its top edge, 0.4 chosen; the main runs had none finished, and were restarted at the wider grid's choice).
GRIDS["lars1024"] = (0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
LARS = {"name": "lars", "momentum": 0.9, "trust_coefficient": 0.001, "weight_decay": 0.0005}
PAPER_LARS_ALPHA0 = 0.1  # Table 9's caption: alpha0 = 0.1, LR scaled to alpha0 x B_loc x Q / 128
# Why lenet5_classic: the paper trains until the training accuracy plateaus (Tr.A. >= 99.5 in its tables).
# Horovod's LeNet-5 (dropout 0.5 after conv2 and fc1, 21.8k parameters) reached 90.7-91.2% Tr.A. at 80
# epochs and was still rising (an 80-epoch probe of the --model lenet5 specs): it cannot fit
# its training set at any budget this machine affords. LeCun's LeNet-5 (6-16-120-84, no dropout, 61.7k
# parameters) can, and it is the workbench's other LeNet-5.
MODELS = {"lenet5_classic": "LeNet-5 classic (LeCun: conv 6, conv 16, fc 120, 84, 10; no dropout)",
          "lenet5": "LeNet-5 (Horovod's pytorch_mnist.py: conv 10, conv 20, fc 50, 10; dropout 0.5)"}
MODEL = "lenet5_classic"
N_TRAIN = 60000  # Fashion-MNIST training images; 2 workers


def ev(B, E, n=20):
    """eval_every (steps) for about n evaluations in a run of E epochs at local batch B, 2 workers."""
    return max(1, int(round(N_TRAIN / (2 * B) * E / n)))


def dp_sched(B, E):
    """MB-SGD/PL-SGD: warm up from alpha0 to alpha0 x B x Q / 128 over 5/300 of the budget, multistep
    x0.1 at 1/2 and 3/4 (Table 13: 5 of 300 epochs, dampening at 150, 225)."""
    return {"name": "warmup_scaled", "scale": 2.0 * B / 128, "warmup_epochs": E * 5 / 300,
            "milestones": [E / 2, 3 * E / 4], "gamma": 0.1}


def async_arm(kind, U, B, E, a0, H=16, P=0.5):
    """LAP: peak 2 alpha0 x B/128 (Table 13's alpha_LAP, scaled with B_loc as Table 1's caption says 'in
    each case'); LPP: peak 2.5 alpha0 x B/128. Warmup from alpha0, cosine to 0 right after it.
    Returns (lr, schedule, algorithm)."""
    ratio = (2.0 if kind == "lap" else 2.5) * B / 128
    alg = {"name": kind + "_sgd", "H": H, "switch_at": P, "updaters": U, "mode": "simulated"}
    if kind == "lpp":
        alg["full_fraction"] = 50 / 300
    return ratio * a0, {"name": "cosine", "warmup_epochs": E * 5 / 300, "warmup_start_factor": 1 / ratio}, alg


# The protocol these specs follow (Table 13's recipe scaled to the budget, the model, simulated mode, the
# clocks, the selection and plateau rules) is stated once, in the targets' protocol tables
# (analysis/psgd_analysis/catalog.py, _LPP_PLATEAU and _LPP_TABLE9); each spec's description is one line.


# The main specs' divergence guard: a training loss above it marks the run diverged (runtime max_loss) instead
# of letting it run on. The 80-epoch probe's LAP U = 6 run at 40 epochs blew up in its warmup (loss 23 -> 3e5 ->
# 4e32) and came back finite with a dead network, which without a guard reads "completed"; its 80-epoch run
# spiked to 7.6 and recovered, so the guard sits far above a recoverable spike (initial loss ln 10 = 2.3).
# The selection and probe specs ran without it (a rewritten spec would not --resume); select_check already
# scores a diverged or dead run by its validation accuracy.
MAX_LOSS = 1000.0


def base(E, B=128):
    return {"model": {"name": MODEL}, "workers": 2, "epochs": E, "seed": 1, "log_every": 20,
            "eval_every": ev(B, E), "metrics": {"train_eval_samples": 10000},
            "optimizer": {"name": "sgd", "momentum": 0.9, "weight_decay": 0.0005}, "clock": CLOCK,
            "batch_size": B}


def dump(out, name, desc, b, sweep):
    spec = {"name": name, "description": desc, "output": name + ".h5", "base": b, "sweep": sweep}
    path = os.path.join(out, name + ".json")
    text = json.dumps(spec, indent=2) + "\n"
    # A spec whose bytes are unchanged keeps its timestamp: make then keeps the results files made from it.
    if os.path.exists(path):
        with open(path) as fh:
            if fh.read() == text:
                print("unchanged", path)
                return
    os.makedirs(out, exist_ok=True)
    # whole or not at all: lpp_plateau_run.sh rewrites the specs while the other lane may be opening one
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.replace(path + ".tmp", path)
    print("wrote", path)


def probe(out, budgets, A0):
    E0 = budgets[0]

    def arm(fam, E):
        if fam in ("dp128", "dp1024"):
            B = 128 if fam == "dp128" else 1024
            return [E, B, A0["dp"] if B == 128 else A0["dp1024"], dp_sched(B, E), {"name": "sync_sgd", "combine": "average"}, ev(B, E, n=E)]
        lr, sch, alg = async_arm(fam[:3], 6, 128, E, A0[fam[:3]])
        return [E, 128, lr, sch, alg, ev(128, E, n=E)]

    arms = [arm("dp128", E0), arm("lap6", E0)]
    arms += [a for E in budgets[1:] for a in (arm("dp128", E), arm("lap6", E))]
    arms += [arm("lpp6", E0), arm("dp1024", E0)]
    b = base(E0)
    b.update({"eval_every": arms[0][5], "lr": A0["dp"], "schedule": arms[0][3], "algorithm": arms[0][4]})
    dump(out, "lpp_plateau_probe",
         "R7/R8 plateau probe at {:g} epochs (LPP arXiv:2203.06638 Tables 1, 3, 4): seed 1, a run per family, "
         "{}, alpha0 DP {:g}, DP1024 {:g}, LAP {:g}, LPP {:g}; {}.".format(
             E0, MODEL, A0["dp"], A0["dp1024"], A0["lap"], A0["lpp"],
             "MB-SGD 128 and LAP U = 6 again at {} epochs".format(", ".join("{:g}".format(E) for E in budgets[1:]))
             if budgets[1:] else "E/2 runs: lpp_plateau_probe_{:g}".format(E0 / 2)),
         b, {"epochs+batch_size+lr+schedule+algorithm+eval_every": arms})


def main_specs(out, E, A0, ESEL=10.0):
    # ---- selection stage: alpha0 grid x family on a validation split, a quarter of the budget, 2 seeds
    sel = []
    for fam in ("dp", "dp1024", "lap", "lpp"):
        for a0 in GRIDS[fam]:
            if fam.startswith("dp"):
                B = 1024 if fam == "dp1024" else 128
                sel.append([B, a0, dp_sched(B, ESEL), {"name": "sync_sgd", "combine": "average"}])
            else:
                lr, sch, alg = async_arm(fam, 4, 128, ESEL, a0)
                sel.append([128, lr, sch, alg])
    b = base(ESEL)
    b["metrics"]["validation_fraction"] = 0.1
    b["eval_every"] = ev(128, ESEL, 10)
    b.update({"lr": sel[0][1], "schedule": sel[0][2], "algorithm": sel[0][3]})
    dump(out, "lpp_plateau_select",
         "R7/R8 alpha0 selection (LPP arXiv:2203.06638 Table 13): DP, DP1024, LAP U = 4, LPP U = 4 over their "
         "alpha0 grids, {:g} epochs, validation split 0.1, seeds 101-102.".format(ESEL),
         b, {"seed": [101, 102], "batch_size+lr+schedule+algorithm": sel})

    # ---- Table 1: MB-SGD and PL-SGD at 128 and 1024
    a0 = A0["dp"]
    b = base(E)
    b["max_loss"] = MAX_LOSS
    b.update({"lr": a0, "schedule": dp_sched(128, E), "algorithm": {"name": "sync_sgd", "combine": "average"}})
    dump(out, "lpp_table1_plateau_dp",
         "R7 (LPP arXiv:2203.06638 Table 1): MB-SGD and PL-SGD at B_loc 128 and 1024, {:g} epochs, alpha0 DP {:g}, "
         "DP1024 {:g}, seeds 1-5.".format(E, A0["dp"], A0["dp1024"]),
         b, {"seed": SEEDS, "batch_size+lr+schedule+eval_every": [[128, a0, dp_sched(128, E), ev(128, E)],
                                                                   [1024, A0["dp1024"], dp_sched(1024, E), ev(1024, E)]],
             "algorithm": [{"name": "sync_sgd", "combine": "average"},
                           {"name": "post_local_sgd", "H": 16, "switch_at": 0.5}]})

    # ---- Table 9: MB-SGD and PL-SGD with LARS at B_loc 1024 (its alpha0 chosen by lpp_plateau_select_lars)
    sel = [[1024, a0, dp_sched(1024, ESEL)] for a0 in GRIDS["lars1024"]]
    b = base(ESEL)
    b["metrics"]["validation_fraction"] = 0.1
    b["eval_every"] = ev(1024, ESEL, 10)
    b.update({"optimizer": LARS, "lr": sel[0][1], "schedule": sel[0][2], "batch_size": 1024,
              "algorithm": {"name": "sync_sgd", "combine": "average"}})
    dump(out, "lpp_plateau_select_lars",
         "R13 alpha0 selection (LPP arXiv:2203.06638 Table 9): MB-SGD with LARS (eta 0.001) at B_loc 1024, alpha0 "
         "{:g}-{:g}, {:g} epochs, validation split 0.1, seeds 101-102.".format(GRIDS["lars1024"][0],
                                                                             GRIDS["lars1024"][-1], ESEL),
         b, {"seed": [101, 102], "lr+schedule": [x[1:] for x in sel]})
    a0 = A0["lars1024"]
    b = base(E, 1024)
    b["max_loss"] = MAX_LOSS
    b.update({"optimizer": LARS, "lr": a0, "schedule": dp_sched(1024, E),
              "algorithm": {"name": "sync_sgd", "combine": "average"}})
    dump(out, "lpp_table9_plateau",
         "R13 (LPP arXiv:2203.06638 Table 9): MB-SGD and PL-SGD with LARS (eta 0.001) at B_loc 1024, {:g} epochs, "
         "LARS1024's alpha0 {:g}, seeds 1-5.".format(E, a0),
         b, {"seed": SEEDS, "algorithm": [{"name": "sync_sgd", "combine": "average"},
                                          {"name": "post_local_sgd", "H": 16, "switch_at": 0.5}]})
    # Its ablation: the same runs at the paper's alpha0 0.1. Table 9's LARS rows lose ~7 points to LAP/LPP in the
    # paper; at the chosen alpha0 they lose about a point to the small batch here. Whether the paper's alpha0, not
    # LARS, makes its large-batch rows lose is what these runs measure.
    b = dict(b, lr=PAPER_LARS_ALPHA0)
    dump(out, "lpp_table9_plateau_ablation",
         "R13 ablation (LPP arXiv:2203.06638 Table 9): lpp_table9_plateau's runs at the paper's alpha0 {:g} "
         "instead of the selected {:g}, {:g} epochs, seeds 1-5.".format(PAPER_LARS_ALPHA0, a0, E),
         b, {"seed": SEEDS, "algorithm": [{"name": "sync_sgd", "combine": "average"},
                                          {"name": "post_local_sgd", "H": 16, "switch_at": 0.5}]})

    # ---- LAP: Table 1 rows (U 4, 6 at 128; U 4 at 256) + Table 3's other cells (U 8 at 128, U 6 at 256); LPP
    for kind, cells in (("lap", [(4, 128), (6, 128), (4, 256), (8, 128), (6, 256)]),
                        ("lpp", [(4, 128), (6, 128), (4, 256)])):
        arms = []
        for U, B in cells:
            lr, sch, alg = async_arm(kind, U, B, E, A0[kind])
            arms.append([B, lr, sch, alg, ev(B, E)])
        b = base(E)
        b["max_loss"] = MAX_LOSS
        if kind == "lpp":
            b["clock"] = {"profile": PROFILE}
        b.update({"lr": arms[0][1], "schedule": arms[0][2], "algorithm": arms[0][3]})
        cells_text = ", ".join("({}, {})".format(U, B) for U, B in cells)
        dump(out, f"lpp_table1_plateau_{kind}",
             "R7/R8 (LPP arXiv:2203.06638 Tables 1, 3): {}-SGD simulated, (U, B_loc) in {}, {:g} epochs, alpha0 {:g}, "
             "seeds 1-5.".format(kind.upper(), cells_text, E, A0[kind]), b,
             {"seed": SEEDS, "batch_size+lr+schedule+algorithm+eval_every": arms})

    # ---- Table 4: K sweep at U 6, B 128 (K = 16, P = 1/2 is lpp_table1_plateau_lap's (6, 128) cell)
    lr, sch, alg = async_arm("lap", 6, 128, E, A0["lap"])
    ks = []
    for H, P in ((1, 0.5), (4, 0.5), (8, 0.5), (8, 0.0)):
        a = dict(alg)
        a["H"], a["switch_at"] = H, P
        ks.append(a)
    b = base(E)
    b["max_loss"] = MAX_LOSS
    b.update({"lr": lr, "schedule": sch, "algorithm": ks[0]})
    dump(out, "lpp_frequency_plateau_k",
         "R8 (LPP arXiv:2203.06638 Table 4): LAP-SGD U = 6, B_loc 128, K in {{1, 4, 8}} from half the budget and "
         "K = 8 from the start, {:g} epochs, alpha0 LAP {:g}, seeds 1-5.".format(E, A0["lap"]),
         b, {"seed": SEEDS, "algorithm": ks})

    # ---- Table 1's ablation: where LAP/LPP's accuracy gap to MB-SGD 128 comes from (the schedule, the
    # staleness of U concurrent updaters, the local averaging), each arm one change away from a Table 1 cell
    lr, sch, _ = async_arm("lap", 4, 128, E, A0["lap"])
    _, sch1, alg1 = async_arm("lap", 1, 128, E, A0["lap"])
    _, _, alg6 = async_arm("lap", 6, 128, E, A0["lap"])
    abl = [[{"name": "sync_sgd", "combine": "average"}, sch, lr],    # (a) MB-SGD 128 with LAP's schedule and LR
           [alg6, dp_sched(128, E), A0["lap"]],                      # (b) LAP U=6 with MB-SGD's multistep, same peak
           [alg1, sch1, lr]]                                         # (c) LAP U=1: no concurrent updaters
    b = base(E)
    b["max_loss"] = MAX_LOSS
    b.update({"lr": abl[0][2], "schedule": abl[0][1], "algorithm": abl[0][0]})
    dump(out, "lpp_table1_plateau_ablation",
         "R7 ablation (LPP arXiv:2203.06638 Table 1): MB-SGD 128 with LAP's schedule, LAP U = 6 with MB-SGD's, "
         "LAP U = 1 (no staleness), {:g} epochs, seeds 1-5.".format(E),
         b, {"seed": SEEDS, "algorithm+schedule+lr": abl})

    time_spec(out, E, A0)
    paper_rule_spec(out, E, A0)


def paper_rule_spec(out, E, A0):
    """MB-SGD at B_loc 128 and 1024 under the paper's LR rule: ONE alpha0 (DP's choice at 128) for both local
    batches, warmed up to alpha0 x B_loc x Q / 128 (Table 1 caption, Table 13), so the x8 scaling of the large
    batch runs. The main specs give B_loc 1024 its own selected alpha0 (DP1024), which makes its peak LR equal
    to B_loc 128's: that protocol cannot show the generalization gap the paper's Table 1 reports for MB-SGD at
    1024. This file asks whether there is one to keep."""
    a0 = A0["dp"]
    b = base(E)
    b["max_loss"] = MAX_LOSS
    b.update({"lr": a0, "schedule": dp_sched(128, E), "algorithm": {"name": "sync_sgd", "combine": "average"}})
    dump(out, "lpp_table1_paper_rule",
         "R7b (LPP arXiv:2203.06638 Table 1 caption): MB-SGD at B_loc 128 and 1024 with one alpha0 {:g} warmed up "
         "to alpha0 x B_loc x Q / 128, {:g} epochs, seeds 1-5.".format(a0, E),
         b, {"seed": SEEDS, "batch_size+schedule+eval_every": [[128, dp_sched(128, E), ev(128, E)],
                                                                [1024, dp_sched(1024, E), ev(1024, E)]]})


def time_spec(out, E, A0):
    """lpp_plateau_time: every main cell's simulated time on the profile, at E_TIME epochs (the recipe scaled to
    it), seed 1; the reports scale a cell's time per epoch to the main budget E. The (6, 128) LAP cell also runs
    at 2 x E_TIME: its time per epoch must agree (the report checks it)."""
    arms = []
    for B, fam in ((128, "dp"), (1024, "dp1024")):
        for alg in ({"name": "sync_sgd", "combine": "average"}, {"name": "post_local_sgd", "H": 16, "switch_at": 0.5}):
            arms.append([E_TIME, B, A0[fam], dp_sched(B, E_TIME), alg, ev(B, E_TIME, 1)])
    for kind, cells in (("lap", [(4, 128), (6, 128), (4, 256), (8, 128), (6, 256)]), ("lpp", [(4, 128), (6, 128), (4, 256)])):
        for U, B in cells:
            lr, sch, alg = async_arm(kind, U, B, E_TIME, A0[kind])
            arms.append([E_TIME, B, lr, sch, alg, ev(B, E_TIME, 1)])
    for H, P in ((1, 0.5), (4, 0.5), (8, 0.5), (8, 0.0)):
        lr, sch, alg = async_arm("lap", 6, 128, E_TIME, A0["lap"], H, P)
        arms.append([E_TIME, 128, lr, sch, alg, ev(128, E_TIME, 1)])
    lr, sch, alg = async_arm("lap", 6, 128, 2 * E_TIME, A0["lap"])
    arms.append([2 * E_TIME, 128, lr, sch, alg, ev(128, 2 * E_TIME, 1)])
    lr, sch, alg = async_arm("lap", 1, 128, E_TIME, A0["lap"])  # lpp_table1_plateau_ablation's (c); (a), (b) share
    arms.append([E_TIME, 128, lr, sch, alg, ev(128, E_TIME, 1)])  # MB-SGD 128's and LAP U=6's cells (no time in the LR)
    b = base(E_TIME)
    b["clock"] = {"profile": PROFILE}
    b["metrics"] = {"train_eval_samples": 1000}
    b.update({"lr": arms[0][2], "schedule": arms[0][3], "algorithm": arms[0][4], "eval_every": arms[0][5]})
    dump(out, "lpp_plateau_time",
         "R7/R8 time (LPP arXiv:2203.06638 Tables 1, 3, 4): every main cell at {:g} epochs on {}, seed 1; "
         "the reports scale its time per epoch to {:g} epochs.".format(E_TIME, PROFILE, E),
         b, {"epochs+batch_size+lr+schedule+algorithm+eval_every": arms})


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=float, default=40.0, help="main budget E (the probe's plateau)")
    ap.add_argument("--alpha0", default="{}", help='JSON {"dp": .., "lap": .., "lpp": ..} (the selection\'s choice)')
    ap.add_argument("--probe-epochs", type=float, nargs="+", default=[40.0, 20.0])
    ap.add_argument("--select-epochs", type=float, default=10.0, help="the selection stage's budget")
    ap.add_argument("--model", default=MODEL, choices=sorted(MODELS), help="the network (default %(default)s)")
    ap.add_argument("--out", default=os.path.join(ROOT, "experiments", "lpp"))
    a = ap.parse_args()
    MODEL = a.model
    A0 = {"dp": 0.01, "dp1024": None, "lap": 0.01, "lpp": 0.01, "lars1024": 0.1}  # lars1024: the paper's alpha0
    try:
        given = json.loads(a.alpha0)
    except json.JSONDecodeError as e:
        ap.error(f"--alpha0: not JSON ({e.msg} at column {e.colno}): {a.alpha0!r}")
    if not isinstance(given, dict) or set(given) - set(A0) or not all(
            isinstance(v, (int, float)) and v > 0 for v in given.values()):
        ap.error(f"--alpha0: expected an object with positive numbers for some of {sorted(A0)}, got {a.alpha0!r}")
    A0.update(given)
    if A0["dp1024"] is None:  # not selected yet: the paper's scaling of DP's alpha0
        A0["dp1024"] = A0["dp"]
    if a.epochs <= 0 or a.select_epochs <= 0 or any(e <= 0 for e in a.probe_epochs):
        ap.error("--epochs, --probe-epochs and --select-epochs must be > 0")
    probe(a.out, a.probe_epochs, A0)
    main_specs(a.out, a.epochs, A0, a.select_epochs)
