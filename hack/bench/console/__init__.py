"""The console with thousands of jobs: the Jobs page's first paint and its
smoothness while jobs change, in headless Chromium, and the console's memory
with many open pages (``python -m hack.bench.console``)."""
