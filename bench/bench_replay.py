"""Replay throughput of clawwatch against ccusage on the same state dirs, both eras.

Times ``python -m monitor replay --state-dir DIR --json --no-cache`` (cold, every detector
on) and ``ccusage openclaw session --json --offline --open-claw-path DIR`` on the dirs from
``bench/gen_large_state.py``: one warm-up run each (discarded), then ``--runs`` rounds
that alternate the two tools, medians reported. Peak RSS and CPU time come from
``wait4`` (RSS: the largest process of the tree); the whole tree's memory is sampled
(``TreeMemory``: summed PSS).
Then compares per-session token totals of both tools with the generator's manifest;
ccusage selects only ``event_json``, so in the SQLite era it misses the usage of
assistant messages stored in ``event_zstd`` rows, which is counted exactly.

    .venv/bin/python bench/bench_replay.py [--dir /tmp/clawwatch-bench] [--runs 3]
        [--eras sqlite,legacy] [--results FILE] [--breakdown]

``--breakdown`` adds a third contender, clawwatch with every detector off (``reading``), in
the same rounds: what reading, decoding, typing and counting cost against ccusage, and the
detectors' share of clawwatch's CPU.

ccusage is pinned to CCUSAGE_VERSION and npm-installed into ~/.cache/clawwatch/ when
missing (20.0.26, the newest at the time, ships no linux-x64 binary; 20.0.24 does).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
CCUSAGE_VERSION = "20.0.24"
CCUSAGE_PREFIX = Path.home() / ".cache" / "clawwatch" / f"ccusage-{CCUSAGE_VERSION}"
TOKEN_FIELDS = ("input", "output", "total")


def ensure_ccusage() -> Path:
    binary = CCUSAGE_PREFIX / "node_modules" / ".bin" / "ccusage"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("bench_replay: npm is needed to install ccusage")
    CCUSAGE_PREFIX.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--prefix", str(CCUSAGE_PREFIX), "--no-save",
                    f"ccusage@{CCUSAGE_VERSION}"], check=True)
    return binary


def clean_env() -> dict[str, str]:
    """No OpenClaw variables leak in: each tool sees only the dir it is given."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENCLAW_", "CLAWWATCH_"))}
    env["NO_COLOR"] = "1"
    return env


class TreeMemory(threading.Thread):
    """Samples the memory of a process and all its descendants every 0.1 s: the peak of
    their summed PSS (proportional set size: a page shared by forked workers counts once,
    split among them). ``wait4``'s ``ru_maxrss`` is only the largest single process."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        try:
            root = psutil.Process(self.pid)
        except psutil.Error:
            return
        while not self.done.wait(0.1):
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for proc in procs:
                try:
                    total += proc.memory_full_info().pss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)


def timed(command: list[str], output: Path, cwd: Path, timeout: float | None) -> dict:
    """Run ``command`` with stdout to ``output``; wall time, CPU time, peak RSS of its
    largest process and peak memory of its whole tree (or, past ``timeout`` seconds, the
    process tree is killed and the run marked timed out)."""
    with open(output, "wb") as out, open(output.with_suffix(".stderr"), "wb") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=clean_env(), cwd=cwd,
                                   start_new_session=True)
        tree = TreeMemory(process.pid)
        tree.start()
        killer = threading.Timer(timeout, os.killpg, (process.pid, signal.SIGKILL)) \
            if timeout else None
        if killer:
            killer.start()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        tree.done.set()
        tree.join()
        if killer:
            killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    figures = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
               "rss_mb": usage.ru_maxrss / 1024, "tree_mb": tree.peak / 1e6}
    if timeout and wall >= timeout:     # its children were killed unreaped: CPU unknown
        return {**figures, "cpu": None, "timed_out": True}
    stderr = output.with_suffix(".stderr").read_text(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"bench_replay: {' '.join(command)} exited {process.returncode}:\n"
                         f"{stderr[-2000:]}")
    return {**figures, "timed_out": False}


def commands(state_dir: Path, ccusage: Path) -> dict[str, list[str]]:
    return {
        "clawwatch": [sys.executable, "-m", "monitor", "replay", "--state-dir", str(state_dir),
                      "--json", "--no-cache"],            # cold: the summary cache is not read
        "ccusage": [str(ccusage), "openclaw", "session", "--json", "--offline",
                    "--open-claw-path", str(state_dir)],
    }


def without_detectors(replay: list[str], scratch: Path) -> list[str]:
    """``replay`` with every detector off (a config written into ``scratch``): the
    breakdown's ``reading`` contender."""
    config = scratch / "no-detectors.yaml"
    config.write_text("detection:\n  enabled: false\n")
    return [*replay, "--config", str(config)]


def median_of(runs: list[dict]) -> dict:
    """Each figure's median over the runs that have it (a killed run has no CPU time)."""
    medians = {}
    for key in ("wall", "cpu", "rss_mb", "tree_mb"):
        known = [r[key] for r in runs if r[key] is not None]
        medians[key] = statistics.median(known) if known else None
    return medians


def cpu_text(cpu: float | None, width: int, places: int) -> str:
    """Seconds of CPU as the tables print them; "n/a" for a killed run."""
    return f"{cpu:{width}.{places}f}s" if cpu is not None else "n/a".rjust(width + 1)


def spread(runs: list[dict]) -> float:
    walls = [r["wall"] for r in runs]
    return (max(walls) - min(walls)) / statistics.median(walls)


def compare_tokens(era: str, manifest: dict, clawwatch_doc: dict, ccusage_doc: dict) -> dict:
    """Per-session token totals of both tools against the generator's truth."""
    truth = {s["session_id"]: s for s in manifest["sessions"]}
    ours = {s["session_id"]: s["tokens"] for s in clawwatch_doc["sessions"]}
    theirs = {s["sessionId"]: s for s in ccusage_doc["sessions"]}
    report = {"sessions": len(truth), "clawwatch_equal": 0, "clawwatch_missing": 0,
              "ccusage_equal": 0, "ccusage_missing_sessions": 0, "ccusage_short_sessions": 0,
              "ccusage_short_explained_by_zstd": 0, "ccusage_missed_tokens": 0,
              "zstd_assistant_messages": 0, "zstd_assistant_tokens": 0}
    for sid, session in truth.items():
        want = session["tokens"]
        expected = {"input": want.get("input", 0), "output": want.get("output", 0),
                    "total": want.get("total", 0)}
        got = ours.get(sid)
        if got is None:
            report["clawwatch_missing"] += 1
        elif all(got[f] == expected[f] for f in TOKEN_FIELDS):
            report["clawwatch_equal"] += 1
        hidden = session["zstd_assistant"] if era == "sqlite" else \
            {"messages": 0, "input": 0, "output": 0, "total": 0}
        report["zstd_assistant_messages"] += hidden["messages"]
        report["zstd_assistant_tokens"] += hidden["total"]
        row = theirs.get(sid)
        if row is None:
            report["ccusage_missing_sessions"] += 1
            seen = {"input": 0, "output": 0, "total": 0}
        else:
            seen = {"input": row["inputTokens"], "output": row["outputTokens"],
                    "total": row["totalTokens"]}
            if all(seen[f] == expected[f] for f in TOKEN_FIELDS):
                report["ccusage_equal"] += 1
                continue
            report["ccusage_short_sessions"] += 1
        report["ccusage_missed_tokens"] += expected["total"] - seen["total"]
        if all(expected[f] - seen[f] == hidden[f] for f in TOKEN_FIELDS):
            report["ccusage_short_explained_by_zstd"] += 1
    return report


def bench_era(era: str, root: Path, manifest: dict, ccusage: Path, args) -> dict:
    state_dir = root / era
    scratch = root / "bench-out"
    cmds = commands(state_dir, ccusage)
    cwd = {"clawwatch": Path(args.monitor_root), "ccusage": REPO,
           "reading": Path(args.monitor_root)}
    limit = {"clawwatch": None, "ccusage": args.ccusage_timeout, "reading": None}
    if args.breakdown:
        cmds["reading"] = without_detectors(cmds["clawwatch"], scratch)
    results: dict[str, list[dict]] = {name: [] for name in cmds}
    timed_out: set[str] = set()
    if args.warmup:
        for name, command in cmds.items():
            figures = timed(command, scratch / f"{era}-{name}-warmup.json", cwd[name],
                            limit[name])
            if figures["timed_out"]:
                timed_out.add(name)
                results[name].append(figures)
    for round_no in range(args.runs):
        order = list(cmds) if round_no % 2 == 0 else list(reversed(cmds))
        for name in order:
            if name in timed_out and results[name]:
                continue
            figures = timed(cmds[name], scratch / f"{era}-{name}.json", cwd[name], limit[name])
            results[name].append(figures)
            if figures["timed_out"]:
                timed_out.add(name)
            print(f"  {era} round {round_no + 1} {name:9}: {figures['wall']:7.2f}s wall "
                  f"{cpu_text(figures['cpu'], 7, 2)} cpu {figures['rss_mb']:8.0f} MB rss "
                  f"{figures['tree_mb']:6.0f} MB tree"
                  + (" TIMED OUT" if figures["timed_out"] else ""), file=sys.stderr, flush=True)
    clawwatch_doc = json.loads((scratch / f"{era}-clawwatch.json").read_text())
    ccusage_doc = None if "ccusage" in timed_out else \
        json.loads((scratch / f"{era}-ccusage.json").read_text())
    megabytes = manifest["totals"]["bytes"] / 1e6
    events = manifest["totals"]["events"]
    summary = {"era": era, "megabytes": megabytes, "events": events, "runs": args.runs,
               "monitor_root": str(args.monitor_root)}
    for name, figures in results.items():
        med = median_of(figures)
        summary[name] = {**{k: None if v is None else round(v, 3) for k, v in med.items()},
                         "mb_per_s": round(megabytes / med["wall"], 1),
                         "events_per_s": round(events / med["wall"]),
                         "spread": round(spread(figures), 3),
                         "walls": [round(r["wall"], 2) for r in figures],
                         "timed_out": name in timed_out}
    summary["ratio"] = round(summary["ccusage"]["wall"] / summary["clawwatch"]["wall"], 2)
    if "reading" in summary:
        summary["reading_ratio"] = round(summary["ccusage"]["wall"]
                                         / summary["reading"]["wall"], 2)
        summary["detector_cpu_share"] = round(
            1 - summary["reading"]["cpu"] / summary["clawwatch"]["cpu"], 3)
    summary["tokens"] = compare_tokens(era, manifest, clawwatch_doc, ccusage_doc) \
        if ccusage_doc else None
    summary["findings"] = sum(len(s["findings"]) for s in clawwatch_doc["sessions"])
    summary["source_errors"] = sum(s["errors"] for s in clawwatch_doc["sources"])
    return summary


def print_summary(summary: dict) -> None:
    era = summary["era"]
    print(f"\n== {era}: {summary['megabytes']:,.0f} MB of transcript JSON, "
          f"{summary['events']:,} entries, medians of {summary['runs']} runs")
    for name in ("clawwatch", "ccusage", "reading"):
        if name not in summary:
            continue
        s = summary[name]
        more = " (timed out: at least this long)" if s["timed_out"] else ""
        print(f"{name:10} {s['wall']:8.2f} s{more}  {s['mb_per_s']:7.1f} MB/s  "
              f"{s['events_per_s']:>9,} entries/s  peak RSS {s['rss_mb']:7.0f} MB "
              f"(largest process; whole tree {s['tree_mb']:.0f} MB)  "
              f"cpu {cpu_text(s['cpu'], 0, 1)}  spread {s['spread'] * 100:.0f}%  "
              f"walls {s['walls']}")
    ratio = summary["ratio"]
    print(f"throughput ratio clawwatch/ccusage: {ratio:.2f}x "
          f"(goal >= 2x: {'met' if ratio >= 2 else 'missed'}; "
          f"no worse: {'met' if ratio >= 1 else 'missed'})")
    if "reading" in summary:
        print(f"without the detectors (reading, decoding, typing, counting): "
              f"{summary['reading_ratio']:.2f}x ccusage; the detectors take "
              f"{summary['detector_cpu_share'] * 100:.0f}% of clawwatch's CPU")
    t = summary["tokens"]
    print(f"clawwatch findings: {summary['findings']:,}, source errors: "
          f"{summary['source_errors']}")
    if t is None:
        print("tokens: not compared (ccusage timed out)")
        return
    print(f"tokens: clawwatch equal to truth in {t['clawwatch_equal']:,}/{t['sessions']:,} "
          f"sessions ({t['clawwatch_missing']} missing); ccusage equal in "
          f"{t['ccusage_equal']:,}, short in {t['ccusage_short_sessions']:,}, absent in "
          f"{t['ccusage_missing_sessions']:,}; misses {t['ccusage_missed_tokens']:,} tokens; "
          f"{t['ccusage_short_explained_by_zstd']:,} of the differing sessions are explained "
          f"exactly by {t['zstd_assistant_messages']:,} assistant messages in event_zstd rows "
          f"({t['zstd_assistant_tokens']:,} tokens)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/clawwatch-bench",
                        help="output dir of bench/gen_large_state.py")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eras", default="sqlite,legacy")
    parser.add_argument("--results", help="write the figures as JSON here")
    parser.add_argument("--monitor-root", default=str(REPO),
                        help="run `python -m monitor` from this dir (a patched copy, to "
                             "measure a change before and after)")
    parser.add_argument("--ccusage-timeout", type=float, default=1800.0,
                        help="seconds before a ccusage run is killed and reported as "
                             "taking at least that long")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time clawwatch with every detector off (`reading`), to "
                             "tell what reading costs from what detecting does")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="skip the discarded warm-up run of each tool")
    args = parser.parse_args(argv)
    root = Path(args.dir)
    manifest = json.loads((root / "manifest.json").read_text())
    ccusage = ensure_ccusage()
    (root / "bench-out").mkdir(exist_ok=True)
    print(f"clawwatch: {sys.executable} -m monitor (from {args.monitor_root}); "
          f"ccusage {CCUSAGE_VERSION}: {ccusage}")
    summaries = []
    for era in [e.strip() for e in args.eras.split(",") if e.strip()]:
        summary = bench_era(era, root, manifest, ccusage, args)
        print_summary(summary)
        summaries.append(summary)
    if args.results:
        Path(args.results).write_text(json.dumps(summaries, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
