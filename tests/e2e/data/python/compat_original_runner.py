"""Runs the compat cases of tests/e2e/test_compat_sources.py on the original bizon 0.6.4, all in
one process of build/original-venv's Python (its package imports in seconds, so one import for
every case keeps the suite fast), the way an Airflow-style wrapper runs a pipeline:
RunnerFactory.create_from_yaml(config).run(), in each case's directory.

    python compat_original_runner.py <cases.json> <outcomes.json>

cases.json maps a case name to its directory (holding config.yml); outcomes.json gets, per case,
{"success": bool, "status": text}: the runner's status, or the exception that ended the run."""

import json
import os
import sys

from bizon.engine.engine import RunnerFactory


def run_case(directory):
    os.chdir(directory)
    try:
        status = RunnerFactory.create_from_yaml(os.path.join(directory, "config.yml")).run()
    except Exception as error:  # The case's outcome, compared with ours by the test.
        return {"success": False, "status": f"{type(error).__name__}: {error}"}
    return {"success": status.is_success, "status": status.to_string()}


def main(cases_path, outcomes_path):
    with open(cases_path) as cases_file:
        cases = json.load(cases_file)
    outcomes = {name: run_case(directory) for name, directory in cases.items()}
    with open(outcomes_path, "w") as outcomes_file:
        json.dump(outcomes, outcomes_file)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
