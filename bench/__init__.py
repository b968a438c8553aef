"""Benchmarks and the seed-figure report (never part of test pass/fail). Filled by the benchmark issue."""
