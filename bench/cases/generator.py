"""The cases of the generator's records into the file destination, ours against the original:

  generator      ours: the built-in `generator` source; the original: bench/sources/
                 generator_source.py (--custom-source), which emits the identical records. An
                 interim case: bench.py runs it only when asked for by name, or while ours cannot
                 run --custom-source.
  python-source  the same YAML and the same custom Python source file on both
  transform      python-source plus a two-line Python transform (the generator pairing while ours
                 cannot run --custom-source)

Also the pairings and the probes that other cases use: memory runs the pairings at three N,
bigquery needs --custom-source.
"""

from __future__ import annotations

from typing import Optional

from harness.core import PROBE_N, Harness, Pending, Plan, Tier
from harness.records import BASE_N, GENERATOR_SOURCE, generator_yaml
from harness.runs import Invocation
from harness.verify import check_generator

TRANSFORM_PYTHON = """\
data["name"] = data["name"].upper()
data["value_x2"] = data["value"] * 2
"""


def transforms_yaml() -> str:
    body = "".join(f"      {line}\n" for line in TRANSFORM_PYTHON.splitlines())
    return f"transforms:\n  - label: bench\n    python: |\n{body}"


def generator_invocation(impl: str, binary: str, source_name: str, n: int, custom_source: bool,
                         transformed: bool = False) -> Invocation:
    argv = [binary, "run", "{config}"]
    if custom_source:
        argv += ["--custom-source", str(GENERATOR_SOURCE)]
    extra = transforms_yaml() if transformed else ""
    return Invocation(
        impl=impl, argv=argv, n=n,
        render=lambda count: generator_yaml(source_name, count, extra),
        check=lambda first, last, count: check_generator(first, last, count, transformed))


def custom_source_pending(h: Harness) -> Optional[str]:
    """Why our binary cannot run --custom-source, or None."""
    # A source name that is not built in, so a binary that ignored --custom-source fails
    # instead of silently running the built-in generator.
    why = h.probe("custom-source", generator_invocation(
        "ours", h.ours, "bench_python", PROBE_N, custom_source=True))
    return None if why is None else f"our binary cannot run --custom-source yet ({why})"


def transforms_pending(h: Harness) -> Optional[str]:
    why = h.probe("transforms", generator_invocation(
        "ours", h.ours, "generator", PROBE_N, custom_source=False, transformed=True))
    return None if why is None else f"our binary cannot run Python transforms yet ({why})"


def pairing(h: Harness, n: int, python_source: bool, transformed: bool = False) -> Tier:
    """Ours and the original on the generator's records. The original always runs
    bench/sources/generator_source.py (--custom-source); ours runs it too with python_source (the
    python-source pairing, the same YAML on both), else its built-in generator (the generator
    pairing)."""
    name = "bench_python" if python_source else "generator"
    return Tier(n,
                generator_invocation("ours", h.ours, name, n, python_source, transformed),
                generator_invocation("original", h.original, name, n, True, transformed))


def plan_generator(h: Harness) -> Plan | Pending:
    return Plan(
        label="equivalent sources, not the same YAML: ours runs the built-in `generator` "
              "source, the original runs bench/sources/generator_source.py (--custom-source), "
              "which emits the identical records (ids, fields, sizes)",
        same_yaml=False, tiers=[pairing(h, h.scaled(BASE_N), python_source=False)])


def plan_python_source(h: Harness) -> Plan | Pending:
    why = custom_source_pending(h)
    if why:
        return Pending(why)
    return Plan(label="same YAML and the same custom Python source file on both "
                      "(bench/sources/generator_source.py)",
                same_yaml=True, tiers=[pairing(h, h.scaled(BASE_N), python_source=True)])


def plan_transform(h: Harness) -> Plan | Pending:
    if why := transforms_pending(h):
        return Pending(why)
    python_source = custom_source_pending(h) is None
    label = ("python-source case plus a two-line Python transform; same YAML" if python_source
             else "generator case plus a two-line Python transform; equivalent sources (ours "
                  "cannot run --custom-source yet)")
    return Plan(label=label, same_yaml=python_source,
                tiers=[pairing(h, h.scaled(BASE_N), python_source, transformed=True)])
