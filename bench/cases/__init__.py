"""Cases of bench/bench.py kept in modules of their own (the YAML files beside them are our side
of a case, read as text)."""
