"""psgd_analysis: read psgd-workbench results into tidy pandas DataFrames, compute summary
metrics, draw the papers' figures and write the reproduction reports.

    import sys; sys.path.insert(0, "analysis")      # from the repository root
    import psgd_analysis as pa
    res = pa.load("reports/lenet_sweep.h5")          # or pa.load([file1, file2, ...])
    res.runs          # DataFrame, one row per run: run_id, file, swept keys, status, summary
    res.curves        # DataFrame, long: run_id, step, epoch, samples, wall_s, sim_s, lr,
                      #   train_loss, test_loss, test_accuracy
    res.metrics       # DataFrame, long: run_id, metric, step, tensor, value
    res.runs.groupby(["algorithm", "workers"])["final_test_accuracy"].median()
    pa.run_metrics(res, target_accuracy=0.8)         # best/final accuracy, steps/samples/time to target
    rep = pa.adasum_lenet.lenet(*[f"reports/{s}.h5" for s in pa.catalog.get("adasum-lenet").specs])  # R1 report
    rep.write("reports"); pa.write_index("reports")

Modules: results (loading), tables (the reports' fixed Markdown/CSV number formats, row
matching), metrics (summaries), figures (one function per figure), report (the report
engine: md/csv/png writer, protocol table, provenance, five-class verdicts, index), stats
(intervals, exact tests, verdict rules), claims (claim decisions as pure functions), paper
(the papers' numbers with citations), catalog (the one table of reproduction targets); one
module per report of DESIGN.md section 11: adasum_lenet, adasum_seq_error,
adasum_orthogonality, adasum_latency, adasum_toy, adasum_optimizers (R1-R6; what they share
in adasum_common), lpp_table1, lpp_frequency, lpp_table9, lpp_rule (R7, R8, R13, R7b; their
shared machinery in lpp, the plateau protocol's stages in lpp_plateau, its clock in
lpp_time), adaptive_figures, adaptive_sensitivity (R9, R10; their runs in adaptive_runs, their
rules in adaptive_rules, their shared plots in adaptive_plots); gpt_peer (the char-level GPT
beside its PyTorch peer: `python3 -m psgd_analysis.gpt_peer OURS.h5 PEER.json...`). Uses
Debian's /usr/bin/python3 with python3-pandas, python3-h5py,
python3-numpy and python3-matplotlib (scripts/install-deps.sh).
"""
import sys

try:
    import pandas  # noqa: F401
except ImportError as _e:  # say which interpreter and which package, not just the traceback
    raise ImportError(f"psgd_analysis needs pandas, which {sys.executable} lacks: use Debian's "
                      "/usr/bin/python3 with python3-pandas (scripts/install-deps.sh)") from _e

from . import catalog, claims, figures, metrics, paper, stats, tables  # noqa: F401,E402
from . import (adasum_latency, adasum_lenet, adasum_optimizers, adasum_orthogonality,  # noqa: F401,E402
               adasum_seq_error, adasum_toy)
from .metrics import (best_per_group, best_value, final_value, first_reach, median_over,  # noqa: F401
                      pivot, run_metrics)
from .report import Report, write_index  # noqa: F401
from .results import Results, algorithm_label, load  # noqa: F401
from .tables import match, to_csv, to_markdown  # noqa: F401

__all__ = ["Results", "Report", "load", "algorithm_label", "run_metrics", "first_reach",
           "final_value", "best_value", "best_per_group", "median_over", "pivot", "write_index",
           "match", "to_markdown", "to_csv", "catalog", "claims", "figures", "metrics", "paper", "stats",
           "tables", "adasum_lenet", "adasum_seq_error", "adasum_orthogonality", "adasum_latency", "adasum_toy",
           "adasum_optimizers"]
