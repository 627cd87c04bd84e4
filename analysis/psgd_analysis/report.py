"""Report writer: one Markdown file, one CSV and one PNG per reproduction target, plus the
reports/README.md index regenerated from every report found (DESIGN.md section 11).

    rep = Report("adasum-lenet", "R1: LeNet-5 ...", sources=[paper.R1_SOURCE])
    rep.text("...")
    rep.table(df, "Untuned accuracy")          # a DataFrame as a Markdown table in the .md
    rep.claim("Sum collapses beyond 8 workers", holds=False, evidence="...")
    rep.data(long_df)                           # the .csv (all numbers behind the report)
    rep.figure(fig)                             # the .png
    rep.write("reports")                        # -> reports/adasum-lenet.{md,csv,png}
    write_index("reports")                      # -> reports/README.md

Each report starts with an HTML comment holding a JSON record (title, verdicts, runtime)
that write_index reads back, so the index never goes stale against the reports.
"""
from __future__ import annotations

import datetime as _dt
import glob
import json
import os
import re
from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from .tables import to_csv, to_markdown

_INDEX_RE = re.compile(r"<!-- index: (\{.*?\}) -->", re.S)


def index_line(record: dict[str, Any]) -> str:
    """The first line of every report: the record write_index reads back (read_record).
    The one writer of this format, for Report.write and the other report tools
    (psgd_analysis.lpp, psgd_analysis.adaptive_runs)."""
    return f"<!-- index: {json.dumps(record)} -->"


def verdict_word(holds: bool | None) -> str:
    """The one-word verdict used in reports and the index."""
    return {True: "holds", False: "does not hold", None: "partly holds"}[holds]


class Report:
    """Accumulates the parts of one target's report; ``write`` produces the files."""

    def __init__(self, target: str, title: str, sources: Sequence[str] = (), command: str = ""):
        self.target = target
        self.title = title
        self.sources = list(sources)
        self.command = command or f"make -f Makefile.experiments {target}"
        self._parts: list[str] = []
        self._claims: list[dict[str, Any]] = []
        self._data: pd.DataFrame | None = None
        self._fig = None
        self._extra: list[tuple[str, Any]] = []
        self.runtime: dict[str, Any] = {}
        self.inputs: list[str] = []
        # seeds per cell behind the verdicts (>= 3 for a decided verdict); None =
        # a benchmark or not recorded
        self.seeds: int | None = None

    # --- content ------------------------------------------------------------------
    def section(self, heading: str) -> None:
        self._parts.append(f"\n## {heading}\n")

    def text(self, md: str) -> None:
        self._parts.append(md.rstrip() + "\n")

    def table(self, df: pd.DataFrame, caption: str = "", floatfmt: Any = ".4g",
              headers: dict[str, str] | None = None) -> None:
        if caption:
            self._parts.append(f"**{caption}**\n")
        self._parts.append(to_markdown(df, floatfmt=floatfmt, headers=headers) + "\n")

    def claim(self, claim: str, holds: bool | None, evidence: str) -> None:
        """A claim of the paper and whether our numbers support it (None = partly)."""
        self._claims.append({"claim": claim, "holds": holds, "verdict": verdict_word(holds),
                             "evidence": evidence})

    def claim_verdict(self, claim: str, verdict: str, evidence: str,
                      arms: Mapping[str, Sequence[float]] | None = None) -> None:
        """A claim decided by intervals over seeds (stats.decide: HOLDS / DOES NOT HOLD /
        INCONCLUSIVE), recorded as it is. ``arms``: the per-seed values of the statistic in
        each arm the claim compares (e.g. {"Average": steps, "Adasum": steps}); when every
        arm gives the same value (stats.constant_across_arms) the record says so and the
        engine (classify) does not let the claim be decided."""
        c = {"claim": claim, "holds": verdict == "HOLDS", "verdict": verdict, "evidence": evidence}
        if arms is not None and _stats.constant_across_arms(arms):
            c["constant"] = "arms"
        self._claims.append(c)

    def data(self, df: pd.DataFrame) -> None:
        """The CSV written beside the report: the numbers behind its tables."""
        self._data = df

    def figure(self, fig: Any) -> None:
        self._fig = fig

    def extra_figure(self, suffix: str, fig: Any) -> None:
        """A further figure, written as <target><suffix>.png and linked after the main one."""
        self._extra.append((suffix, fig))

    # --- output ---------------------------------------------------------------------
    def write(self, outdir: str) -> dict[str, str]:
        os.makedirs(outdir, exist_ok=True)
        base = os.path.join(outdir, self.target)
        paths = {"md": base + ".md"}
        if self._data is not None:
            to_csv(self._data, base + ".csv")
            paths["csv"] = base + ".csv"
        if self._fig is not None:
            self._fig.savefig(base + ".png", dpi=100)
            paths["png"] = base + ".png"
            import matplotlib.pyplot as plt
            plt.close(self._fig)
        for suffix, fig in self._extra:
            fig.savefig(base + suffix + ".png", dpi=100)
            paths["png" + suffix] = base + suffix + ".png"
            import matplotlib.pyplot as plt
            plt.close(fig)
        record = {"target": self.target, "title": self.title,
                  "claims": [{k: c[k] for k in ("claim", "verdict", "constant") if k in c}
                             for c in self._claims],
                  "runtime": self.runtime, "seeds": self.seeds, "inputs": list(self.inputs)}
        out = [index_line(record), f"# {self.title}", ""]
        # the command, inputs and runtime are in the engine's Provenance section (finish)
        if self.sources:
            out.append("Paper: " + "; ".join(self.sources) + ".  ")
        out.append(f"Generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
                   " by analysis/reproduce.py.")
        if self._claims:
            out += ["", "## Does the paper's claim hold with our numbers?", ""]
            for c in self._claims:
                cls, _, why = c["verdict"].partition(" (")  # 'NOT TESTED (why; the data alone: X)'
                out.append(f"- **{cls.upper()}**" + (f" ({why}" if why else "") + f": {c['claim']}  ")
                out.append(f"  Ours: {c['evidence']}")
        out.append("")
        out += self._parts
        if self._fig is not None:
            out += ["", f"![{self.target}]({self.target}.png)", ""]
        for suffix, _ in self._extra:
            out += [f"![{self.target}{suffix}]({self.target}{suffix}.png)", ""]
        with open(paths["md"], "w") as fh:
            fh.write("\n".join(out).rstrip() + "\n")
        return paths


# The index lists the targets in the catalog's order (catalog.ORDER).
from . import catalog as _catalog  # noqa: E402
from . import stats as _stats  # noqa: E402

TARGET_ORDER = _catalog.ORDER


def read_record(md_path: str) -> dict[str, Any] | None:
    with open(md_path) as fh:
        m = _INDEX_RE.search(fh.readline())
    return json.loads(m.group(1)) if m else None


# The specs behind each target, to count its seeds when a report's record lacks the field.
TARGET_SPECS = {t.name: list(t.specs) for t in _catalog.TARGETS}


def spec_seeds(target: str) -> int | None:
    """Seeds per cell of a target's specs (the length of the sweep's seed list, else 1)."""
    n = None
    for sp in TARGET_SPECS.get(target, []):
        try:
            with open(_catalog.spec_path(sp)) as fh:
                seeds = json.load(fh).get("sweep", {}).get("seed", [None])
        except OSError:
            continue
        k = len(seeds) if isinstance(seeds, list) else 1
        n = k if n is None else min(n, k)
    return n


_VERDICTS = ("HOLDS", "DOES NOT HOLD", "PARTLY HOLDS", "INCONCLUSIVE", "NOT TESTED", "BY CONSTRUCTION")


def table_claims(lines: Sequence[str]) -> list[dict[str, str]]:
    """The claims of a Markdown report: its table rows '| claim | ours | VERDICT |' whose last
    cell is a verdict, as the report says; rows under a '## ...Ablation...' heading are
    labelled 'Ablation: '. Used for a report's own record (psgd_analysis.lpp) and for a
    report without one (write_index)."""
    out, ablation = [], False
    for ln in lines:
        if ln.startswith("## "):
            ablation = "blation" in ln
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[-1].strip("*").split(" (")[0] in _VERDICTS:
            out.append({"claim": ("Ablation: " if ablation else "") + cells[0],
                        "verdict": cells[-1].strip("*")})
    return out


def _table_claims(md_path: str) -> list[dict[str, str]]:
    """table_claims of a report file without a record (lower-case verdicts: not decided by
    this package's intervals)."""
    with open(md_path) as fh:
        return [dict(c, verdict=c["verdict"].lower()) for c in table_claims(fh.read().splitlines())]


def write_index(outdir: str, preamble: str = "") -> str:
    """Regenerate <outdir>/README.md from the index records of every <outdir>/*.md: the verdict
    index first, then `preamble` (how the reports are made), a link to <outdir>/CHANGES.md when
    there is one, and the claims no target reproduces."""
    records = []
    for p in sorted(glob.glob(os.path.join(outdir, "*.md"))):
        if os.path.basename(p) in ("README.md", "CHANGES.md"):
            continue
        r = read_record(p)
        if r is None:
            # a report written by another tool (an older report): list it by
            # its first heading, without verdicts
            with open(p) as fh:
                title = next((ln[2:].strip() for ln in fh if ln.startswith("# ")),
                             os.path.basename(p)[:-3])
            # without a record the report cannot say its seeds: 1 when its spec has no seed
            # sweep; a spec with seeds means the report predates them (regenerate it)
            n = spec_seeds(os.path.basename(p)[:-3])
            r = {"target": os.path.basename(p)[:-3], "title": title,
                 "claims": _table_claims(p) or
                 [{"claim": "(see the report; no verdict recorded)", "verdict": "-"}],
                 "runtime": {}, "seeds": 1 if n in (None, 1) else "stale: predates its seeded spec"}
        if not r.get("seeds"):
            r["seeds"] = spec_seeds(r["target"])
        records.append(r)
    order = {t: i for i, t in enumerate(TARGET_ORDER)}
    records.sort(key=lambda r: (order.get(r["target"], 99), r["target"]))
    lines = ["# Reports: the papers reproduced", ""]
    counts = {c: 0 for c in _stats.VERDICTS}
    for r in records:
        for c in r.get("claims") or []:
            if c.get("verdict", "-") != "-":
                counts[_stats.verdict_class(c["verdict"])] += 1
    counts[_stats.NOT_TESTED] += len(_catalog.OUT_OF_REACH)
    lines += ["**Verdicts, by class** (every claim of every report below, ablations included, and the "
              f"{len(_catalog.OUT_OF_REACH)} claims no target reproduces, NOT TESTED, listed after the table):", "",
              "| " + " | ".join(_stats.VERDICTS) + " | total |",
              "|" + " ---: |" * (len(_stats.VERDICTS) + 1),
              "| " + " | ".join(str(counts[c]) for c in _stats.VERDICTS) + f" | {sum(counts.values())} |", ""]
    lines += ["| target | report | runtime | seeds per cell | claim checked | verdict |",
              "| --- | --- | --- | ---: | --- | --- |"]
    for r in records:
        rt = ", ".join(f"{k} {v}" for k, v in r.get("runtime", {}).items()) or "-"
        claims = r.get("claims") or [{"claim": "-", "verdict": "-"}]
        for j, c in enumerate(claims):
            first = j == 0
            lines.append("| " + " | ".join([
                f"`{r['target']}`" if first else "",
                f"[{r['title']}]({r['target']}.md)" if first else "",
                rt if first else "",
                (str(r["seeds"]) if r.get("seeds") else "-") if first else "",
                c["claim"].replace("|", "/"),
                (f"**{_stats.verdict_class(c['verdict'])}**" + (" (1 seed)" if r.get("seeds") == 1 else ""))
                if c["verdict"] != "-" else "-"]) + " |")
    lines.append("")
    if os.path.exists(os.path.join(outdir, "CHANGES.md")):
        lines += ["What changed in the reports and their verdicts, by date and commit: [CHANGES.md](CHANGES.md).", ""]
    if preamble:
        lines += [preamble.rstrip(), ""]
    lines += ["## Claims no target reproduces (NOT TESTED)", "",
              "The papers' claims at a scale, or with a baseline, the workbench cannot run here "
              "(analysis/psgd_analysis/catalog.py OUT_OF_REACH); each says why and which target comes nearest.", "",
              "| paper | claim | verdict | why | nearest target |", "| --- | --- | --- | --- | --- |"]
    for o in _catalog.OUT_OF_REACH:
        lines.append(f"| {o.source} | {o.claim} | **{_stats.NOT_TESTED}** | {o.why} | {o.proxy} |")
    lines.append("")
    path = os.path.join(outdir, "README.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return path


# ---------------------------------------------------------------------------- the engine
_ZERO_WIDTH = re.compile(r"\[\s*([-+]?[0-9.]+)\s*(%?),\s*\1\s*\2\s*\]")
_ANY_INTERVAL = re.compile(r"\[\s*[-+]?[0-9.]+\s*%?,\s*[-+]?[0-9.]+\s*%?\s*\]")


def _commit() -> str:
    """The checkout's commit the report was generated at ('-dirty' when files outside reports/
    differ from it), or 'unknown' outside a checkout."""
    import subprocess
    try:
        head = subprocess.run(["git", "-C", _catalog.ROOT, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", _catalog.ROOT, "status", "--porcelain", "--", ".", ":!reports"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "") if head else "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _writers(inputs: Sequence[str]) -> list[str]:
    """Who wrote each results file: its root attributes (workbench version, git commit of the
    binary, ranks, creation time), read from the file itself; and, when ``--resume`` extended
    it with another binary or rank count, who computed its runs (each run's provenance_json;
    a run from before per-run provenance has the file's root attributes)."""
    out = []
    for p in inputs:
        if not (p.endswith(".h5") and os.path.exists(p)):
            continue
        try:
            import h5py
            with h5py.File(p, "r") as f:
                a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
                writers: dict[tuple, int] = {}
                for g in (f["runs"].values() if "runs" in f else []):
                    pj = g.attrs.get("provenance_json")
                    pv = json.loads(pj.decode() if isinstance(pj, bytes) else pj) if pj is not None else a
                    key = (str(pv.get("workbench_version", "?")), str(pv.get("git_commit", "?")),
                           str(pv.get("mpi_ranks", "?")), str(pv.get("devices", "?")))
                    writers[key] = writers.get(key, 0) + 1
        except (OSError, ImportError):
            continue
        line = (f"`{p}`: workbench {a.get('workbench_version', '?')} (git {a.get('git_commit', '?')}), "
                f"{a.get('mpi_ranks', '?')} ranks, {a.get('devices', '?')}, written {a.get('created_utc', '?')}")
        first = (str(a.get("workbench_version", "?")), str(a.get("git_commit", "?")),
                 str(a.get("mpi_ranks", "?")), str(a.get("devices", "?")))
        if set(writers) - {first}:
            line += "; its runs were computed by " + "; ".join(
                f"workbench {v} (git {c}), {r} ranks, {d}: {n} runs"
                for (v, c, r, d), n in writers.items())
        out.append(line)
    return out


def classify(target: "_catalog.Target", claim: str, verdict: str, evidence: str = "",
             constant: str | None = None) -> tuple[str, str]:
    """The engine's verdict for one claim: (verdict, note). A catalog rule (a protocol
    deviation that can decide the claim, or a time claim fixed by the cost model) overrides
    what the data say; a HOLDS / DOES NOT HOLD whose statistic is the same in every arm it
    compares (``constant`` = "arms", set by Report.claim_verdict from the per-arm values) or
    has an interval of zero width (every interval in its evidence constant across seeds) is
    flagged and becomes INCONCLUSIVE; a report's own 'NOT TESTED / BY CONSTRUCTION /
    INCONCLUSIVE (why; the data alone: X)' keeps its reason and X; else the data's verdict."""
    v = _stats.verdict_class(verdict)
    for rule in target.rules:
        if rule.match.lower() in claim.lower():
            return f"{rule.verdict} ({rule.why})", f"the data alone: {v}"
    full = (verdict or "").strip().strip("*")
    m = _DATA_ALONE.search(full)
    if v in (_stats.NOT_TESTED, _stats.BY_CONSTRUCTION) or (v == _stats.INCONCLUSIVE and m):
        # the report's own check ('NOT TESTED (why; the data alone: X)', or 'INCONCLUSIVE (why; the
        # data alone: X)' when a setting the claim rests on decides it otherwise): keep its reason
        # and what the data said, as a catalog rule's
        if m:
            return full[:m.start()].rstrip(" ;") + ")", f"the data alone: {_stats.verdict_class(m.group(1))}"
        return full, ""
    if v in (_stats.HOLDS, _stats.FAILS) and constant == "arms":
        return (f"{_stats.INCONCLUSIVE} (statistic constant across arms: every arm the claim compares "
                "gives the same value, so the comparison could not have come out otherwise)",
                f"the data alone: {v}")
    intervals = _ANY_INTERVAL.findall(evidence or "")
    if v in (_stats.HOLDS, _stats.FAILS) and intervals and all(_ZERO_WIDTH.fullmatch(x) for x in intervals):
        return (f"{_stats.INCONCLUSIVE} (statistic constant across seeds: an interval of width 0 measures "
                "nothing)", f"the data alone: {v}")
    return v, ""


CLOCK_ROW = "clock profile (from the results files)"


def _cpu(machine: str) -> str:
    """The "CPU: ..." part of a profile's machine text ('' when it records none)."""
    i = machine.find("CPU: ")
    return machine[i:] if i >= 0 else ""


def clock_profile_row(inputs: Sequence[str]) -> Optional[tuple[str, str, str, str]]:
    """The protocol row saying which machine priced sim_s, read from the runs' provenance
    (cost_profile: path, values.machine, measured_here; cpu): a profile measured on another
    CPU prices this host's runs with that machine's costs, so a time claim then carries the
    difference between the two machines. None when no run used a profile."""
    seen: dict[tuple, int] = {}
    for p in inputs:
        if not (p.endswith(".h5") and os.path.exists(p)):
            continue
        try:
            import h5py
            with h5py.File(p, "r") as f:
                for g in (f["runs"].values() if "runs" in f else []):
                    pj = g.attrs.get("provenance_json")
                    pv = json.loads(pj.decode() if isinstance(pj, bytes) else pj) if pj is not None else {}
                    cp = pv.get("cost_profile")
                    if not isinstance(cp, dict):
                        continue
                    machine = str((cp.get("values") or {}).get("machine", ""))
                    key = (str(cp.get("path", "?")), _cpu(machine), str(pv.get("cpu", "")), cp.get("measured_here"))
                    seen[key] = seen.get(key, 0) + 1
        except (OSError, ImportError):
            continue
    if not seen:
        return None
    ours, devs = [], []
    for (path, there, here, same), n in sorted(seen.items(), key=lambda kv: str(kv[0])):
        ours.append(f"`{path}`, measured on {there or 'a machine it does not name'}; {n} runs computed on "
                    f"{here or 'a CPU the results file does not record'}")
        if same is False:
            devs.append(f"`{path}` was measured on another CPU: sim_s prices these runs with that machine's costs, "
                        "so a time claim carries the difference between the two machines")
        elif same is None:
            devs.append(f"`{path}`: whether it was measured on this CPU is not recorded")
    return (CLOCK_ROW, "-", "; ".join(ours), "; ".join(devs) or "none: measured on the CPU that ran them")


def protocol_table(target: "_catalog.Target", extra: Sequence[Sequence[str]] = ()) -> list[str]:
    out = ["## Protocol: paper | ours | deviation and why", "",
           "| item | paper | ours | deviation and why |", "| --- | --- | --- | --- |"]
    for item, p, o, d in [*target.protocol, *extra]:
        out.append("| " + " | ".join(x.replace("|", "/") for x in (item, p, o, d)) + " |")
    return out + [""]


_DATA_ALONE = re.compile(r";?\s*the data alone: ([A-Za-z ]+)\)\s*$")
_ENGINE_RE = re.compile(r"<!-- engine -->.*?<!-- /engine -->\n*", re.S)


def _mark_body(lines: list[str], claims: Sequence[dict[str, Any]]) -> list[str]:
    """Where the engine's class differs from the data's verdict, the body's own verdict for
    that claim ('**HOLDS**' in a claims list or a table row) is shown as the class with the
    data's verdict beside it, so the report never states two verdicts for one claim. A line
    belongs to the claim whose whole text it holds (the longest, when one claim's text holds
    another's); a line holding no whole claim, to the one claim whose first 50 characters it
    holds (a body may shorten a claim), never to one of several."""
    def text(c: dict[str, Any]) -> str:
        return c["claim"].replace("Ablation: ", "")

    def owner(ln: str) -> dict[str, Any] | None:
        whole = [c for c in claims if text(c) and text(c) in ln]
        if whole:
            return max(whole, key=lambda c: len(text(c)))
        prefix = [c for c in claims if text(c) and text(c)[:50] in ln]
        return prefix[0] if len(prefix) == 1 else None

    out = list(lines)
    for i, ln in enumerate(out):
        c = owner(ln)
        if c is None or not c.get("note") or "(the data alone:" in ln:
            continue
        old = c["note"].replace("the data alone: ", "")
        new = c["verdict"].split(" (")[0]
        for w in (old, old.lower(), old.upper()):
            if f"**{w}**" in ln:
                out[i] = ln.replace(f"**{w}**", f"**{new}** (the data alone: {old})", 1)
                break
    return out


def finish(md_path: str, target_name: str, inputs: Sequence[str] = (), note: str = "") -> dict[str, Any]:
    """Every report passes here after its writer (Report.write): the protocol table, the
    provenance (files make wrote, data set, workbench commit, measured runtime) and the
    five-class verdicts are added, and the index record is rewritten with them. Running it
    again replaces what it added (idempotent). Returns the record."""
    t = _catalog.get(target_name)
    with open(md_path) as fh:
        text = fh.read()
    rec = read_record(md_path) or {"target": target_name, "title": t.title,
                                   "claims": table_claims(text.splitlines()), "runtime": {}}
    body = _ENGINE_RE.sub("", _INDEX_RE.sub("", text, count=1).lstrip("\n"))
    lines = body.splitlines()
    claims = []
    for c in rec.get("claims") or []:
        raw = c.get("data_verdict") or c["verdict"]
        key = c["claim"].replace("Ablation: ", "")[:60]
        ev = next((ln + " " + (lines[i + 1] if i + 1 < len(lines) else "")
                   for i, ln in enumerate(lines) if key and key in ln), "")
        v, why = classify(t, c["claim"], raw, ev, c.get("constant"))
        data = why[len("the data alone: "):] if why.startswith("the data alone: ") else _stats.verdict_class(raw)
        c2 = {"claim": c["claim"], "verdict": v, "data_verdict": data}
        if c.get("constant"):
            c2["constant"] = c["constant"]
        if why:
            c2["note"] = why
        claims.append(c2)
    old_writers = [ln[len("- Results file "):].rstrip(".") for ln in text.splitlines()
                   if ln.startswith("- Results file ")]
    if not inputs and rec.get("inputs") and rec.get("commit"):
        # passed through again without its results files (reproduce.py reclassify): the provenance
        # of the run that computed the tables stays, and the new pass is dated beside it
        inputs, commit = rec["inputs"], rec["commit"]
        rec["reclassified_at"] = _commit()
    else:
        old_writers = []
        commit = _commit()
        rec.pop("reclassified_at", None)
    if not inputs:
        inputs = [p + " (absent when this report was last passed through the engine)"
                  for p in _catalog.h5_paths(t)]
    rec.update(target=target_name, title=rec.get("title") or t.title, claims=claims,
               commit=commit, data=t.data, inputs=list(inputs))
    if note:
        rec["note"] = note
    if not rec.get("seeds"):
        rec["seeds"] = spec_seeds(target_name)
    head = ["<!-- engine -->", "## Verdicts (five classes; DESIGN.md section 11)", "",
            "| claim | verdict | the data alone |", "| --- | --- | --- |"]
    for c in claims:
        cls, _, why = c["verdict"].partition(" (")
        head.append(f"| {c['claim'].replace('|', '/')} | **{cls}**" + (f" ({why}" if why else "")
                    + f" | {c['data_verdict']} |")
    head += ["", "The class is the report's verdict; where it differs from what the data alone say, a "
             "catalog rule (analysis/psgd_analysis/catalog.py: a protocol deviation that can decide the "
             "claim, or a time claim fixed by the cost model) or the engine's check (a statistic constant "
             "across seeds or across the arms it compares) says why.", ""]
    if note:
        head += [f"**Note:** {note.rstrip('.')}.", ""]
    prov = ["## Provenance", "",
            f"- Reproduce: `make -f Makefile.experiments {target_name}` (the rule is generated from "
            "analysis/psgd_analysis/catalog.py into mk/targets.mk).",
            "- Files make wrote and this report read: " + (", ".join(f"`{p}`" for p in rec["inputs"]) or "-") + ".",
            "- Specs: " + (", ".join(f"`{_catalog.spec_path(s_).replace(_catalog.ROOT + os.sep, '')}`"
                                     for s_ in t.specs) or "none (a benchmark)") + ".",
            f"- Data set: {t.data}.",
            f"- Checkout commit this report was generated at: `{rec['commit']}`"
            + (f" (classes and protocol table passed through the engine again at `{rec['reclassified_at']}`, "
               "without the results files)" if rec.get("reclassified_at") else "") + ".",
            *[f"- Results file {w}." for w in (old_writers or _writers(rec["inputs"]))],
            "- Runtime (measured; the sum of the runs' wall times in the results files): "
            + (", ".join(f"{k} {v}" for k, v in (rec.get("runtime") or {}).items()) or "not recorded") + ".",
            "<!-- /engine -->", ""]
    k = next((i for i, ln in enumerate(lines) if ln.startswith("# ")), -1)
    title = lines[:k + 1] if k >= 0 else [f"# {t.title}"]
    rest = _mark_body(lines[k + 1:] if k >= 0 else lines, claims)
    while rest and not rest[0].strip():
        rest = rest[1:]
    # The clock row comes from the results files; a pass without them keeps the row it had.
    row = clock_profile_row(inputs if not rec.get("reclassified_at") else [])
    extra = [row] if row else [[c.strip() for c in ln.strip().strip("|").split(" | ")]
                               for ln in text.splitlines() if ln.startswith(f"| {CLOCK_ROW} |")][:1]
    out = [index_line(rec)] + title + [""] + head + protocol_table(t, extra) + prov + rest
    with open(md_path, "w") as fh:
        fh.write("\n".join(out).rstrip() + "\n")
    return rec
