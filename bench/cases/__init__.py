"""The cases of bench/bench.py, a module per case or family of cases: each holds its N, its YAML
(or the YAML file beside it, our side of a case, read as text), its checks and its plan, a
function of the Harness (bench/harness/core.py) that bench.py's CASES names."""
