#!/usr/bin/python3
"""The how-to (analysis/HOWTO-add-a-target.md) runs as written: its spec and target module are
extracted from the page, its claim is run where it must HOLD and where it must NOT, and (given
a workbench binary) the target goes through repro-smoke.

usage: test_howto.py [WORKBENCH]   (without a binary only the claim checks run)
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HOWTO = os.path.join(ROOT, "analysis", "HOWTO-add-a-target.md")
WB = None


def extract(dest):
    """Write every '<!-- howto: NAME -->' code block of the how-to to dest/NAME."""
    with open(HOWTO) as fh:
        text = fh.read()
    blocks = re.findall(r"<!-- howto: (\S+) -->\n```\w*\n(.*?)```", text, re.S)
    for name, body in blocks:
        if name.endswith(".py"):
            body = body.replace("SPEC_DIR", dest)
        with open(os.path.join(dest, name), "w") as fh:
            fh.write(body)
    return [b[0] for b in blocks]


class HowTo(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="howto-")
        self.names = extract(self.tmp)

    def test_blocks_present(self):
        self.assertEqual(sorted(self.names), ["howto_toy.json", "howto_toy.py"])

    def test_claim_can_hold_and_can_fail(self):
        sys.path.insert(0, os.path.join(ROOT, "analysis"))
        sys.path.insert(0, self.tmp)
        import howto_toy
        from psgd_analysis import stats as st
        avg = [100.0 + i for i in range(10)]
        self.assertEqual(howto_toy.fewer_steps(avg, [60.0 + i for i in range(10)])[0], st.HOLDS)
        self.assertEqual(howto_toy.fewer_steps(avg, [140.0 + i for i in range(10)])[0], st.FAILS)
        self.assertEqual(howto_toy.fewer_steps(avg, [a + (5 if i % 2 else -5) for i, a in enumerate(avg)])[0],
                         st.INCONCLUSIVE)

    def test_through_smoke(self):
        if not os.environ.get("HOWTO_WB"):
            self.skipTest("no workbench binary given")
        env = dict(os.environ, PSGD_EXTRA_TARGETS=os.path.join(self.tmp, "howto_toy.py"),
                   PYTHONPATH=self.tmp)
        out = os.path.join(self.tmp, "smoke")
        p = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "repro_smoke.py"), "--only",
                            "howto-toy", "--wb", os.environ["HOWTO_WB"], "--np", "1", "--out", out],
                           capture_output=True, text=True, env=env, cwd=ROOT)
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("smoke: ok   howto-toy", p.stdout)
        with open(os.path.join(out, "reports", "howto-toy.md")) as fh:
            md = fh.read()
        self.assertIn("## Protocol: paper | ours | deviation and why", md)
        self.assertIn("| seeds | not stated | 30 | toys are cheap |", md)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        os.environ["HOWTO_WB"] = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
