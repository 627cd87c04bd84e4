#!/usr/bin/python3
"""R4's reading of the benchmark (psgd_analysis/adasum_latency.py: split_repetitions, latency_ratios)
and its scoped claim's rule (stats.combine_cells below 1.45 over sizes) on made-up benchmark
output: independent repetitions are split at the make rule's marker, ratios are taken per
repetition (not of the medians), and the claim holds, fails or stays open as the numbers say.
Run: /usr/bin/python3 -m unittest tests/analysis/test_latency.py -v
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import stats as st  # noqa: E402
from psgd_analysis import adasum_latency as latency  # noqa: E402


def bench(rows):
    """bench_collectives' part-1 table: bytes count | mpi | sum | adasum | adasum/mpi."""
    out = ["# part 1", "# bytes count | mpi | sum | adasum | ratio"]
    for b, mpi, s, a in rows:
        out.append(f"  {b}  {b // 4} |  {mpi:.1f} 0.00 0.00 0 |  {s:.1f} 0.00 0.00 0 |  {a:.1f} 0.00 0.00 0 |  {a / mpi:.3f}")
    out.append("# in-process part")
    out.append("RESULT wrong=0")
    return "\n".join(out)


def file_of(reps):
    return "\n".join(f"{latency.REP_MARK}{k + 1}\n{bench(r)}" for k, r in enumerate(reps))


class Latency(unittest.TestCase):
    def test_split_and_ratios_per_repetition(self):
        reps = [[(4096, 1.0, 0.8, 1.0), (65536, 10.0, 8.0, 9.0)],
                [(4096, 2.0, 1.0, 1.5), (65536, 12.0, 8.0, 10.0)],
                [(4096, 1.0, 1.0, 1.1), (65536, 11.0, 9.0, 9.9)]]
        parts = latency.split_repetitions(file_of(reps))
        self.assertEqual(len(parts), 3)
        tabs = [latency.parse_bench_collectives(p)[0] for p in parts]
        f = latency.latency_ratios(tabs)
        self.assertEqual(list(f["bytes"]), [4096, 65536])
        # each repetition's own ratio, not a ratio of medians
        self.assertEqual([round(x, 6) for x in f["over_sum"].iloc[0]], [1.25, 1.5, 1.1])
        self.assertAlmostEqual(f["mpi_us"].iloc[0], 1.0)  # median
        # a file without markers is one repetition
        self.assertEqual(len(latency.split_repetitions(bench(reps[0]))), 1)

    def test_scoped_claim_rule(self):
        near = [[1.10, 1.12, 1.09, 1.11, 1.13], [1.20, 1.18, 1.22, 1.19, 1.21]]
        self.assertEqual(st.combine_cells(near, 1.45, "below"), st.HOLDS)
        far = [[1.10, 1.12, 1.09, 1.11, 1.13], [2.0, 2.1, 1.9, 2.05, 1.95]]
        self.assertEqual(st.combine_cells(far, 1.45, "below"), st.FAILS)
        noisy = [[1.10, 1.12, 1.09, 1.11, 1.13], [1.0, 1.9, 1.2, 1.7, 1.5]]
        self.assertEqual(st.combine_cells(noisy, 1.45, "below"), st.INCONCLUSIVE)


if __name__ == "__main__":
    unittest.main()
