"""What the HTTP connector tests share (rest_api and the SaaS sources against their fakes in
tests/fakes): running a pipeline with fast retries, and reading the retry log lines."""

from __future__ import annotations

import re

#: Every retry wait is multiplied by this in the tests (see src/http/http_session.h), so a
#: ten-retry policy with a factor-2 backoff runs in milliseconds. Log lines keep the real waits.
FAST = {"BIZON_HTTP_BACKOFF_SCALE": "0.001"}


def retry_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "Retrying HTTP request" in line]


def waits(stderr: str) -> list[float]:
    """The waits the retry log lines announce, in seconds."""
    return [float(m.group(1)) for m in re.finditer(r"Retrying HTTP request in ([0-9.]+) s", stderr)]


def run(bizon, config_text: str, *args, env=None, check=0, timeout=120):
    """`bizon run` of `config_text` (as pipeline.yml) with fast retries; the outcome goes to
    result.json."""
    path = bizon.write("pipeline.yml", config_text)
    full_env = dict(FAST)
    full_env.update(env or {})
    return bizon.run("run", path, "--result-json", "result.json", *args, env=full_env, check=check,
                     timeout=timeout)
