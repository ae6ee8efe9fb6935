"""`kbtool explore`: property-based exploration of one op with Hypothesis (issue #8, item 3).

strategies.py  every Hypothesis strategy: drawn raw spec cases built on the op's own cases as templates
engine.py      one backend at a time: draw, judge with `check`'s code, apply known differences, shrink, replay
save.py        --save: a found failure becomes a regular spec case in specs/ops.yaml
render.py      the JSON document, the terminal text, progress on stderr
"""
