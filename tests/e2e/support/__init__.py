"""What the end-to-end tests share: pipeline builders, readers of what a run left behind, process
control, the exactly-once check, server and Python-runtime probes.

No tests live here, and no module is named test_*, so pytest never collects this package. The
tests import its modules by name (`from support.pipelines import pipeline`): pytest puts
tests/e2e on sys.path, and conftest.py adds tests/fakes for the fake servers.
"""
