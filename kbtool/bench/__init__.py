"""`kbtool bench`: each op timed on each backend, as performance engineers measure.

families.py   the size family of each op (the spec's `bench:`, else a case grown along dim 0)
cost.py       flops and bytes of one call, and the rates they make of a time
peak.py       this machine's peak, measured in the same run
measure.py    backends one at a time, each op × size × mode timed in the worker (worker/timing.py)
stats.py      median, IQR, CV, the unstable flag, growth exponents, ratios between backends
compare.py    the regression gate against a baseline (Mann-Whitney U and a minimum effect)
report.py     the versioned JSON (bench.schema.json) and the views rendered from it
terminal.py, markdown_view.py, html_view.py (+ templates/bench.html.j2): one view each
"""
