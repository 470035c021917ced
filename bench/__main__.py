"""`python -m bench [NAME...] [--json] [--smoke] [--repeat N] [--list] [--keep] [--report [--report-file FILE]]`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.harness import machine, render, run_benchmark
from bench.registry import discover

DOC = Path(__file__).resolve().parents[1] / "docs" / "performance.md"


def main(argv: list[str] | None = None) -> int:
    registry = discover()
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run pkgmgr's benchmarks (SPEC 12): each against its baseline, alternately, reporting medians, "
                    "the median ratio and whether the target is met.",
        epilog="benchmarks: " + ", ".join(sorted(registry)))
    parser.add_argument("names", nargs="*", metavar="NAME", help="benchmarks to run (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--smoke", action="store_true", help="run each once, quickly, without timing claims (CI)")
    parser.add_argument("--repeat", type=int, default=5, metavar="N", help="alternating runs per benchmark (5)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and their targets")
    parser.add_argument("--keep", action="store_true", help="keep the work directories (for profiling)")
    parser.add_argument("--report", action="store_true",
                        help="then rewrite the summary table of every target in the report file, keeping its "
                             "before column")
    parser.add_argument("--report-file", type=Path, default=DOC, metavar="FILE",
                        help="the file --report rewrites (docs/performance.md)")
    parser.add_argument("--fail-on-miss", action="store_true", help="exit 3 when a target is not met")
    parser.add_argument("--entries", metavar="N[,N...]",
                        help="with registry-scale: registry maintenance and search at these index sizes (a format-2 "
                             "index generated directly; bench/scale.py), e.g. 1000,10000,100000,1000000")
    args = parser.parse_args(argv)
    if args.entries is not None:
        if args.names != ["registry-scale"]:
            parser.error("--entries applies to registry-scale alone")
        from bench.scale import run_scale

        try:
            sizes = [int(text.replace("_", "")) for text in args.entries.split(",")]
        except ValueError:
            parser.error(f"--entries {args.entries!r}: expected numbers such as 1000,10000")
        if any(size < 1 for size in sizes):
            parser.error("--entries: each size must be at least 1")
        print(run_scale(sizes, keep=args.keep))
        return 0

    if args.report and args.smoke:
        parser.error("--report needs timed runs, not --smoke")
    unknown = [name for name in args.names if name not in registry]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)} (have: {', '.join(sorted(registry))})")
    if args.list:
        for name in sorted(registry):
            print(f"{name}: {registry[name].summary} (target: {registry[name].target.text})")
        return 0
    selected = [registry[name] for name in (args.names or sorted(registry))]
    results = []
    for bench in selected:
        if not args.json:
            print(f"running {bench.name} ...", file=sys.stderr, flush=True)
        results.append(run_benchmark(bench, repeat=args.repeat, smoke=args.smoke, keep=args.keep))
    info = machine()
    if args.json:
        print(json.dumps({"machine": info, "smoke": args.smoke, "repeat": 1 if args.smoke else args.repeat,
                          "results": [r.to_json() for r in results]}, indent=2))
    else:
        print(render(results, info, smoke=args.smoke, repeat=args.repeat))
    if args.report:
        from bench.report import write_report

        write_report(args.report_file, results, info)
        print(f"summary table written to {args.report_file}", file=sys.stderr)
    if any(r.error for r in results):
        return 1
    if args.fail_on_miss and any(r.met is False for r in results):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
