"""Runner settings and outcome (the runners are the binary's)."""
