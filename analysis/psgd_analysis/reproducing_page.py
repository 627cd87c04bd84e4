"""The text around the catalog's target table: the note above the verdict index of
reports/README.md and docs/reproducing.md, whole (`analysis/reproduce.py readme-section`
prints it; its target table is generated from psgd_analysis/catalog.py, and
tests/analysis/test_catalog.py checks both).
"""
from . import catalog as _catalog


#: where the reports come from, under the verdict index of reports/README.md
INDEX_NOTE = """\
How the targets run, the runtimes and the verdict classes: [docs/reproducing.md](../docs/reproducing.md).
`make -f Makefile.experiments reproduce-all` regenerates every report and this index.
"""

#: docs/reproducing.md, whole (`analysis/reproduce.py readme-section` prints it; the target
#: table in it is generated from the catalog, and tests/analysis/test_catalog.py checks it)
README_SECTION = """\
# Reproducing the papers

The reports, one per target, and the verdict index: [reports/README.md](../reports/README.md).

One make target per reproduced table/figure (DESIGN.md section 11), all defined in one table,
`analysis/psgd_analysis/catalog.py`, from which the make rules (`mk/targets.mk`), `repro-smoke`,
`analysis/reproduce.py`, this table and `reports/README.md` are generated or checked. Each target
runs its specs into `reports/<spec>.h5` (git-ignored; reused while newer than the spec and the
binary, `REUSE=1` skips the check, `rm reports/<name>.h5` forces a rerun), then
`analysis/reproduce.py` writes `reports/<target>.md` (a protocol table paper | ours | deviation,
the provenance, ours beside the paper's numbers, a verdict per claim), `.csv` and `.png`, and
regenerates the index. Adding a target: `analysis/HOWTO-add-a-target.md`.

""" + _catalog.readme_table() + """
| `reproduce-all` | every target above, each one's time and the total printed | | | every verdict in `reports/README.md` |
| `repro-smoke` | every target in a tiny mode (3 steps, 1 seed) into a temp dir; part of `make test` | | ~2-3 min | the report files exist and parse (not the verdicts) |

Runtimes are estimates on a 2-core machine (docs/benchmarks.md); each report states the measured one
(the sum of its runs' wall times in its results files).

**Verdicts** (`psgd_analysis.stats`): five classes, counted separately in `reports/README.md`:
HOLDS / DOES NOT HOLD when the data decide at the 95% level, INCONCLUSIVE when they do not,
NOT TESTED when our protocol deviates from the paper's in a way that can decide the claim (the
report names the deviation), BY CONSTRUCTION when a time claim's outcome follows from the cost
model's formula and hand-set parameters (the report shows the formula's prediction). Means over
seeds get a BCa bootstrap interval from 10 seeds on and a Student-t interval below that, both
clipped to the value's bounds; rates a Clopper-Pearson interval; discrete outcomes (a chosen LR,
an ordering) an exact sign test, which needs >= 6 seeds to reach 95% at all; a diverged run is
counted as a divergence rate beside the accuracy of the runs that did not diverge; a claim over
many cells HOLDS when every cell holds and DOES NOT HOLD when Holm over the cells rejects one.
A claim whose statistic is constant across seeds (an interval of width 0) or across the arms
it compares (every arm gives the same value) is INCONCLUSIVE whatever its interval says.
R4 is a benchmark: its intervals are over 5 independent repetitions of it, not seeds.

`make -f Makefile.experiments regress` re-runs the short golden curves in `tests/golden/`
(toy square; LeNet-5, 4 workers, 100 steps; Adasum and sync SGD) and fails naming the run and
step that leaves its tolerance band (`make ... test` runs it; `make ... golden` regenerates the
goldens deliberately). The analysis package `analysis/psgd_analysis` (loader into tidy tables,
summary metrics, one plotting function per figure, the report engine) is what the targets and
`analysis/notebooks/adasum.ipynb` use.
"""
