#!/usr/bin/python3
"""The protocol table's clock row (psgd_analysis/report.py clock_profile_row): which machine
priced sim_s, read from the runs' provenance. A profile from another CPU is a deviation the
row names; the same CPU is none; runs without a profile give no row.
Run: /usr/bin/python3 -m unittest tests/analysis/test_report_clock.py -v
"""
import json
import os
import sys
import tempfile
import unittest

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "analysis"))
from psgd_analysis import report  # noqa: E402

HERE = "CPU: AMD EPYC (family 26 model 2), 2 logical CPUs, kernels built for AVX-512"
THERE = "CPU: Intel Xeon (family 6 model 143), 2 logical CPUs, kernels built for AVX-512"


def write(path, provs):
    with h5py.File(path, "w") as f:
        for i, p in enumerate(provs):
            f.create_group(f"runs/r{i}").attrs["provenance_json"] = json.dumps(p)


def prov(machine, same, cpu=HERE):
    return {"cpu": cpu, "cost_profile": {"path": "calib/p.json", "fnv1a64": "0", "values": {"machine": machine},
                                         "measured_here": same}}


class ClockRow(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()

    def test_same_cpu_is_no_deviation(self):
        p = os.path.join(self.d, "a.h5")
        write(p, [prov("calibrate; " + HERE, True)] * 3)
        item, paper, ours, dev = report.clock_profile_row([p])
        self.assertEqual(item, report.CLOCK_ROW)
        self.assertIn("measured on " + HERE, ours)
        self.assertIn("3 runs computed on " + HERE, ours)
        self.assertTrue(dev.startswith("none"))

    def test_another_cpu_is_named(self):
        p = os.path.join(self.d, "b.h5")
        write(p, [prov("calibrate; " + THERE, False)] * 2 + [prov("calibrate; " + THERE, False, cpu=THERE)])
        _, _, ours, dev = report.clock_profile_row([p])
        self.assertIn("2 runs computed on " + HERE, ours)
        self.assertIn("1 runs computed on " + THERE, ours)
        self.assertIn("another CPU", dev)

    def test_unrecorded_cpu_and_no_profile(self):
        p = os.path.join(self.d, "c.h5")
        write(p, [prov("typed by hand", None)])
        self.assertIn("not recorded", report.clock_profile_row([p])[3])
        q = os.path.join(self.d, "d.h5")
        write(q, [{"cpu": HERE}])
        self.assertIsNone(report.clock_profile_row([q]))
        self.assertIsNone(report.clock_profile_row([os.path.join(self.d, "absent.h5")]))


if __name__ == "__main__":
    unittest.main()
