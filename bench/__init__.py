"""mpdp benchmarks: speed and error goals measured against a baseline run in the same process.

Run a suite with ``python -m bench <suite> [--json] [--quick]`` or ``mpdp bench <suite>``. Each suite is a
module ``bench/suites/<name>.py`` with a function ``run(quick: bool) -> list[BenchResult]``.
"""
