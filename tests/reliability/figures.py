"""The figures of docs/reliability.md, from an actual run of the suites.

    rm -f /tmp/reliability.jsonl
    PKGMGR_RELIABILITY_REPORT=/tmp/reliability.jsonl python -m pytest -n 2 -q tests/reliability tests/fuzz
    python -m tests.reliability.figures /tmp/reliability.jsonl [--doc docs/reliability.md]

Each suite appends one JSON line per observation (tests/reliability/helpers.py: `record`); this
turns them into the Markdown tables of the document (printed, or with --doc written between the
document's `<!-- figures:begin -->` and `<!-- figures:end -->` lines). The adversarial archive
corpus is counted from tests/archive/corpus.py, whose every entry tests/archive/test_extract.py
runs.
"""

from __future__ import annotations

import collections
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def table(header: list[str], rows: Iterable[Iterable[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _states(items: list[dict[str, Any]]) -> str:
    counts = collections.Counter(item["state"] for item in items)
    return ", ".join(f"{counts[s]} {s}" for s in ("old", "new", "partial") if counts[s])


def crash_section(rows: list[dict[str, Any]]) -> str:
    crashes = [r for r in rows if r["kind"] == "crash"]
    order = dict(next((r["by_command"] for r in rows if r["kind"] == "crash_points"), []))  # scenario order
    position = {(c, label): i for c, labels in order.items() for i, label in enumerate(labels)}
    by_command: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in sorted(crashes, key=lambda r: position.get((r["command"], r["label"]), 0)):
        by_command[row["command"]].append(row)
    points = len({(r["command"], r["label"]) for r in crashes})
    out = [(f"**{points} distinct (command, crash point) pairs** were killed with SIGKILL, each once; "
            "every kill was followed by a successful next command and `doctor --check` exit 0."), ""]
    out.append(table(["command", "points", "state left by the kill", "crash points (PKGMGR_TEST_CRASH_AT)"], [
        (command, len(items), _states(items), ", ".join(f"`{i['label']}`" for i in items))
        for command, items in sorted(by_command.items(), key=lambda kv: list(order).index(kv[0])
                                     if kv[0] in order else len(order))]))
    kills = [r for r in rows if r["kind"] == "random_kill"]
    if kills:
        out += ["", f"**{len(kills)} randomly timed SIGKILLs** during large installs (seeded delays):", ""]
        by_scenario: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for row in kills:
            by_scenario[row["command"]].append(row)
        out.append(table(["scenario", "runs", "killed (else finished first)", "state left", "with leftovers to clean"], [
            (name, len(items), sum(i["killed"] for i in items), _states(items), sum(i["leftovers"] > 0 for i in items))
            for name, items in sorted(by_scenario.items())]))
    return "\n".join(out)


def concurrency_section(rows: list[dict[str, Any]]) -> str:
    runs = [r for r in rows if r["kind"] == "concurrency"]
    by_round: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in runs:
        by_round[row["round"]].append(row)
    processes = sum(r["processes"] for r in runs)
    head = (f"**{len(runs)} rounds, {processes} processes**; no internal error, no `database is locked`; "
            "`doctor --check` held after every round and the state equalled a serial order of the successes.")
    return head + "\n\n" + table(["round", "repeats", "processes", "--lock-timeout", "succeeded", "locked (exit 6)",
                                  "serial order = finish order"], [
        (name, len(items), sum(i["processes"] for i in items), f"{items[0]['lock_timeout']:g} s",
         sum(i["ok"] for i in items), sum(i["locked"] for i in items), sum(i["first_order_matched"] for i in items))
        for name, items in sorted(by_round.items())])


def faults_section(rows: list[dict[str, Any]]) -> str:
    faults = [r for r in rows if r["kind"] == "network_fault"]
    return f"**{len(faults)} fault kinds**, each through `pkgmgr ext install`:\n\n" + table(
        ["fault", "outcome", "archive requests"],
        [(f["fault"], f"`{f['code']}`" if " " not in f["code"] else f["code"],
          "-" if f["requests"] is None else f["requests"]) for f in faults])


def fuzz_section(rows: list[dict[str, Any]]) -> str:
    totals: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for row in (r for r in rows if r["kind"] == "fuzz"):
        totals[row["target"]].update(row["outcomes"])
    body = []
    for target, outcomes in sorted(totals.items()):
        refused = ", ".join(f"{count} `{code}`" for code, count in sorted(outcomes.items())
                            if code not in ("accepted", "refused"))
        if outcomes["refused"]:
            refused = (refused + ", " if refused else "") + f"{outcomes['refused']} refused with the file's code"
        body.append((target, sum(outcomes.values()), outcomes["accepted"], refused or "-"))
    total = sum(r[1] for r in body)
    return (f"**{total} examples**, zero exceptions other than `PkgmgrError` (problems lists for the parsers "
            "that return them):\n\n" + table(["target", "examples", "accepted", "refused"], body))


def archives_section() -> str:
    from tests.archive.corpus import ATTACKS

    codes = collections.Counter(a.code for a in ATTACKS)
    zips = sum(a.id.startswith("zip") for a in ATTACKS)
    return (f"**{len(ATTACKS)} adversarial archives** (tests/archive/corpus.py: {zips} zip, {len(ATTACKS) - zips} "
            "tar.gz or malformed streams), each refused with its code and nothing written outside staging: "
            + ", ".join(f"{n} `{c}`" for c, n in sorted(codes.items())) + ".")


def secrets_section(rows: list[dict[str, Any]]) -> str:
    scans = [r for r in rows if r["kind"] == "secrets"]
    return table(["token variable", "commands run", "files scanned", "occurrences"],
                 [(f"`{s['variable']}`", s["commands"], s["files"], 0) for s in scans])


def invariants_section(rows: list[dict[str, Any]]) -> str:
    broken = [r for r in rows if r["kind"] == "invariant"]
    return table(["broken by hand (workspace store)", "reported as", "repaired by `doctor`"],
                 [(b["broken"], f"`{b['check']}`", "yes" if b["repaired"] else "no (listed, exit 4)") for b in broken])


STORAGE_KINDS = ("state-damage", "disk-fault")


def storage_section(rows: list[dict[str, Any]]) -> str:
    """One line per storage fault kind: runs, how many were detected (a damaged state listed by
    `doctor --check`, exit 4; a failing disk reported as `io_error`, exit 9), how many ended
    clean (nothing deleted, the old or the repaired state, doctor consistent with `ext verify`),
    and anomalies (exit 70, a traceback, verify and doctor disagreeing)."""
    kinds: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in (r for r in rows if r["kind"] in STORAGE_KINDS):
        kinds[row["fault"]].append(row)
    body = [(fault, len(runs), sum(bool(r.get("detected")) for r in runs), sum(bool(r["clean"]) for r in runs),
             sum(r["anomalies"] for r in runs)) for fault, runs in sorted(kinds.items())]
    total = sum(b[1] for b in body)
    return (f"**{total} runs over {len(body)} kinds** of damaged state and failing disks (tests/reliability/"
            "test_state_damage.py, test_disk_faults.py):\n\n"
            + table(["fault", "runs", "detected", "clean", "anomalies"], body))


def _grouped(rows: list[dict[str, Any]], kind: str, key: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The records of `kind`, and the same by their `key` (in the order first seen)."""
    found = [r for r in rows if r["kind"] == kind]
    groups: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in found:
        groups[row[key]].append(row)
    return found, groups


def registry_crash_section(rows: list[dict[str, Any]]) -> str:
    """tests/reliability/test_registry_crash.py: signed publishing killed at each step of its switch."""
    kills, by_scenario = _grouped(rows, "registry_crash", "scenario")
    head = (f"**{len(kills)} SIGKILLs** at the steps of signed publishing's switch (tests/reliability/"
            "test_registry_crash.py: the first staged file, the journal, every rename, the end), each followed by "
            "`registry doctor`: the index is then the old one or the new one, byte for byte but for the signed "
            "metadata (at one side's versions), its signatures verify, and the same command run again succeeds.")
    return head + "\n\n" + table(["scenario", "kill points", "old after `registry doctor`", "new", "mixed"], [
        (name, len(items), sum(i["settled"] == "old" for i in items), sum(i["settled"] == "new" for i in items),
         sum(i["settled"] not in ("old", "new") for i in items)) for name, items in by_scenario.items()])


def host_crash_section(rows: list[dict[str, Any]]) -> str:
    """tests/hosts/test_crash.py and test_crash_windows.py: the folder hosts killed at their crash points."""
    kills, by_case = _grouped(rows, "host_crash", "case")
    head = (f"**{len(kills)} SIGKILLs at the host crash points** (tests/hosts/test_crash.py, test_crash_windows.py): "
            "after each, what every host loads is compared with the state before and after a reference run, then "
            "the next writer (the same command, `adopt --host H` or `doctor`) settles it and `ext verify --all` "
            "passes; the kept-tree cases then roll back.")
    return head + "\n\n" + table(["case", "points", "left by the kill", "after the next writer / `doctor`",
                                   "crash points"], [
        (name, len(items), ", ".join(f"{n} {s}" for s, n in collections.Counter(i["mid"] for i in items).items()),
         ", ".join(f"{n} {s}" for s, n in collections.Counter(i["settled"] for i in items).items()),
         ", ".join(dict.fromkeys(f"`{i['label']}`" for i in items))) for name, items in by_case.items()])


_POWER_ORDER = {c: i for i, c in enumerate(("install", "switch", "update", "remove", "activate", "confirm", "sync"))}


def power_loss_section(rows: list[dict[str, Any]]) -> str:
    cuts = [r for r in rows if r["kind"] == "power_loss"]
    by_command: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for row in cuts:
        by_command[row["command"]].append(row)
    runs = len({(r["command"], r["point"]) for r in cuts})
    head = (f"**{len(cuts)} power cuts** over {runs} runs (tests/reliability/test_power_loss.py): each run to its "
            "end or killed at a crash point, then the image copied without a sync, right after and after a forced "
            "journal commit; every cut mounted and checked.")
    return head + "\n\n" + table(
        ["command", "runs", "cuts", "state after the cut", "leftovers removed by `doctor`", "anomalies",
         "crash points"], [
            (command, len({i["point"] for i in items}), len(items), _states(items), sum(i["repaired"] for i in items),
             sum(bool(i["anomalies"]) for i in items),
             ", ".join(dict.fromkeys(f"`{i['point']}`" for i in items if i["point"] != "end")) or "-")
            for command, items in sorted(by_command.items(), key=lambda kv: _POWER_ORDER.get(kv[0], len(_POWER_ORDER)))])


# The fault kinds of issue 16, each from the records of the suite that produces it: (kind, what one
# run is, the rows, whether the rows carry their own clean/anomalies verdict).
def _fault_kinds(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, list[dict[str, Any]]]]:
    def storage(*prefixes: str) -> list[dict[str, Any]]:
        return [r for r in rows if r["kind"] in STORAGE_KINDS and r["fault"].startswith(prefixes)]

    return [
        ("power loss", "a cut: the block device copied without a sync, mounted", "test_power_loss.py",
         [r for r in rows if r["kind"] == "power_loss"]),
        ("process kill (SIGKILL)", "a kill at a crash point or a random moment", "test_crash_harness.py",
         [r for r in rows if r["kind"] in ("crash", "random_kill")]),
        ("concurrent writers", "a round of 4 processes released together", "test_concurrency.py",
         [r for r in rows if r["kind"] == "concurrency"]),
        ("network faults", "a fault kind through `ext install`", "test_network_faults.py",
         [r for r in rows if r["kind"] == "network_fault"]),
        ("disk full", "a 512 KiB or 2 MiB tmpfs filled while installing (in-process or by the file-creating helper) or committing", "test_disk_faults.py",
         storage("enospc")),
        ("read-only filesystem", "a store remounted read-only", "test_disk_faults.py", storage("erofs")),
        ("permission denied", "a store this user may not write (root without CAP_DAC_OVERRIDE)", "test_disk_faults.py",
         storage("eacces")),
        ("I/O errors (EIO)", "a loop-mounted ext4 shut down (EXT4_IOC_SHUTDOWN) before or during a command",
         "test_disk_faults.py", storage("eio")),
        ("damaged rows", "a byte flipped in one text column, 8 commands run", "test_state_damage.py",
         storage("flip-")),
        ("lost database", "state.db missing, empty, garbage or without tables; then `doctor --rebuild`",
         "test_state_damage.py", storage("database-", "rebuild-")),
    ]


def _anomalous(row: dict[str, Any]) -> bool:
    value = row.get("anomalies", 0)
    return bool(value) if not isinstance(value, int) else value > 0


def fault_table_section(rows: list[dict[str, Any]]) -> str:
    body = []
    for kind, run, suite, items in _fault_kinds(rows):
        anomalous = sum(_anomalous(r) for r in items)
        clean = sum(bool(r.get("clean", True)) and not _anomalous(r) for r in items)
        body.append((kind, len(items), clean, anomalous, run, f"`tests/reliability/{suite}`"))
    return ("Every fault kind of issue 16. *Clean*: the old or the new state (or the repaired one), nothing "
            "deleted that a row names, `doctor --check` consistent with `ext verify`; *anomalies*: anything "
            "else — a mixed or incomplete state, exit 70, a traceback. The power-loss and damaged-row suites "
            "record every run before they assert; the others assert first, so a run with an anomaly fails "
            "the suite instead of entering this table.\n\n"
            + table(["fault", "runs", "clean", "anomalies", "a run is", "suite"], body))


def render(rows: list[dict[str, Any]]) -> str:
    sections = [("Fault table", fault_table_section), ("Power loss", power_loss_section),
                ("Kill points", crash_section), ("Host folders (issue 27)", host_crash_section),
                ("Signed publishing (issue 27)", registry_crash_section), ("Concurrent writers", concurrency_section),
                ("Network faults", faults_section), ("Fuzzing", fuzz_section), ("Secrets", secrets_section),
                ("Invariants", invariants_section), ("Storage faults", storage_section)]
    out = []
    for title, render_section in sections:
        out += [f"### {title}", "", render_section(rows), ""]
    out += ["### Attack archives", "", archives_section(), ""]
    return "\n".join(out)


BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"


def write_doc(doc: Path, figures: str) -> None:
    text = doc.read_text(encoding="utf-8")
    head, begin, rest = text.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{doc}: no {BEGIN} ... {END} region")
    doc.write_text(f"{head}{BEGIN}\n{figures}{END}{tail}", encoding="utf-8")


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--doc"):
        print(__doc__, file=sys.stderr)
        return 2
    figures = render(load(Path(argv[0])))
    if len(argv) == 3:
        write_doc(Path(argv[2]), figures)
    else:
        print(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
