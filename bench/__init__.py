"""pkgmgr's benchmark harness (SPEC 12): `python -m bench [NAME...] [--json] [--smoke] [--repeat N]`.

Each benchmark is a module of this package that registers a generator function with
`@benchmark(...)`. The function receives an `Env` (a private work directory, whether this is a
smoke run), sets up its own data (extensions, registries, loopback servers), yields one `Case`
and tears down after the yield:

    from bench import Case, Env, Target, benchmark

    @benchmark("install-20", target=Target("<= 1.0x curl+sha256sum+tar", max_ratio=1.0),
               summary="install 20 small extensions from a static registry on loopback")
    def install_20(env: Env):
        server = start_registry(env.workdir, smoke=env.smoke)   # your own setup
        try:
            yield Case(subject=lambda: env.pkgmgr("ext", "install", *names, "--yes"),
                       baseline=lambda: shell_loop(server.urls),
                       reset=lambda: env.pkgmgr("ext", "remove", *names))
        finally:
            server.stop()

Code after the yield runs once the timed runs are over; put it in `finally` (as above) so
it also runs when the benchmark fails.

The harness runs the subject (pkgmgr) and the baseline alternately (ABBA order, after one
untimed warm-up round), `--repeat` pairs, and reports the medians of wall and CPU time, the
median of the per-pair ratios, the target and whether it is met. `--smoke` runs each
benchmark once, with no warm-up and no timing claims (CI uses it to keep the benchmarks
working). Add a benchmark = add a module here; `python -m bench --list` shows them.
`bench.support` has what the benchmarks share: a static HTTP server on loopback in a process
of its own (with a request log), archive and registry builders, and subprocess helpers.
"""

from bench.registry import BENCHMARKS, Benchmark, Case, Env, Target, benchmark

__all__ = ["BENCHMARKS", "Benchmark", "Case", "Env", "Target", "benchmark"]
