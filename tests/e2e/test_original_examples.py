"""`bizon config validate` on every shape of the original bizon's example configs.

The original ships example configs; tests/e2e/data/original_shapes/ holds the project's own
configs of the same shapes, one per example (its README says which stands for which). Each gets
the verdict the original's `bizon config validate --skip-references` gives the example it stands
for:

* VALID: exit 0, no `error:` and no `warning:` line on stderr;
* WARNED: exit 0, and a `warning:` line for each key the original silently ignores;
* INVALID: exit 1, and an `error:` line for each rejected key.

Every expected message must name the key and point at its line as `<file>:<line>:`.

Several of the original's examples are illustrations it never accepted as written (the spec's
quirk list, connectors.md section 12 item 24), and their shapes here keep the same mistakes. For
some of them the table also checks an edited copy, with the same line numbering:

* four use a placeholder source (`<source-connector>`), which is rejected as an unknown
  connector; the copy names the dummy source instead, so the rest of the file is still checked;
* the two kafka shapes mix a rejected destination key with an ignored source key (`topic:`),
  and an invalid file reports only its errors; the copy blanks the rejected lines, so the warning
  about the ignored key is checked on a file that is otherwise valid.

A missing key has no line of its own, and a key whose value is a block (a list or a mapping) may be
reported where the block starts: such problems accept the key's line or the next one.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from support.paths import SHAPES
from support.pipelines import debezium_transform

VALID = "valid"
WARNED = "warned"
INVALID = "invalid"


@dataclass(frozen=True)
class Problem:
    """One message the validator must print: its severity, the line, and text it must contain."""

    severities: tuple[str, ...]  # "error", "warning", or both when either verdict is acceptable
    mentions: tuple[str, ...]
    lines: tuple[int, ...]

    def describe(self) -> str:
        severities = " or ".join(self.severities)
        lines = " or ".join(str(line) for line in self.lines)
        return f"{severities} at line {lines} mentioning {', '.join(self.mentions)}"


def _lines(line: int | tuple[int, ...]) -> tuple[int, ...]:
    return line if isinstance(line, tuple) else (line,)


def error(*mentions: str, line: int | tuple[int, ...]) -> Problem:
    return Problem(("error",), mentions, _lines(line))


def warning(*mentions: str, line: int | tuple[int, ...]) -> Problem:
    return Problem(("warning",), mentions, _lines(line))


def error_or_warning(*mentions: str, line: int | tuple[int, ...]) -> Problem:
    return Problem(("error", "warning"), mentions, _lines(line))


@dataclass(frozen=True)
class Expected:
    verdict: str
    problems: tuple[Problem, ...] = ()
    # An edited copy of the file and its own verdict.
    edited: Edit | None = None
    # Warnings the original does not print but that a stricter check may add.
    allow_warnings: bool = False


@dataclass(frozen=True)
class Edit:
    """Text replacements and blanked lines; line numbers stay those of the unedited file."""

    expected: Expected
    replace: tuple[tuple[str, str], ...] = ()
    blank_lines: tuple[int, ...] = ()

    def apply(self, text: str) -> str:
        for old, new in self.replace:
            assert old in text, f"{old!r} is not in the file any more"
            text = text.replace(old, new)
        lines = text.split("\n")
        for number in self.blank_lines:
            assert lines[number - 1].strip(), f"line {number} to blank is empty already"
            lines[number - 1] = ""
        return "\n".join(lines)


def dummy_source(expected: Expected) -> Edit:
    # The placeholder shapes authenticate with `api_key` + `params.token`, as dummy expects.
    placeholders = (("<source-connector>", "dummy"), ("<source-stream>", "creatures"))
    return Edit(expected, replace=placeholders)


# filename -> verdict, with the keys each message must name and the line it must point at. The
# comment above each entry names the original's example the file stands for.
EXPECTED: dict[str, Expected] = {
    # destinations-bigquery--bigquery: `service_account_key` sits directly under `config`
    # instead of under `authentication`. Its source's `authentication: {type: api_key,
    # api_key: ...}` is the seed README's own annotated form, which the seed documents as valid
    # (the seed wins over the spec's list).
    "bigquery_key_beside_options.yml": Expected(
        INVALID,
        (error("destination.config", "service_account_key", line=30),),
    ),
    # destinations-bigquery_streaming--bigquery_streaming: placeholder source; `engine.backend`
    # lacks its `config:` block (database and schema are written one level too high, where they
    # are ignored).
    "bigquery_streaming_template.yml": Expected(
        INVALID,
        (
            error("source.name", line=14),
            error("engine.backend", "config", line=(7, 8)),
        ),
        edited=dummy_source(Expected(INVALID, (error("engine.backend", "config", line=(7, 8)),))),
    ),
    # destinations-bigquery_streaming_v2--bigquery_streaming_v2: the same two problems.
    "bigquery_streaming_v2_template.yml": Expected(
        INVALID,
        (
            error("source.name", line=8),
            error("engine.backend", "config", line=(30, 31)),
        ),
        edited=dummy_source(Expected(INVALID, (error("engine.backend", "config", line=(30, 31)),))),
    ),
    # destinations-file--file: placeholder source only; the file destination and the backend
    # are valid.
    "file_template.yml": Expected(
        INVALID, (error("source.name", line=7),), edited=dummy_source(Expected(VALID))
    ),
    # destinations-logger--logger: placeholder source only; the logger destination and the
    # backend are valid.
    "logger_template.yml": Expected(
        INVALID, (error("source.name", line=7),), edited=dummy_source(Expected(VALID))
    ),
    # destinations-logger--logger_incremental: valid. Dummy has no incremental read, so its
    # second run would fail (quirk 1); a warning about that is tolerated.
    "logger_incremental_dummy.yml": Expected(VALID, allow_warnings=True),
    # sources-cycle--cycle, sources-dummy--dummy, sources-gbif--gbif_occurrence_to_logger.
    "cycle_to_file.yml": Expected(VALID),
    "dummy_to_logger.yml": Expected(VALID),
    "gbif_to_logger.yml": Expected(VALID),
    # sources-gsheets--default_auth and --service_account, sources-hubspot--api_key and
    # --api_key_incremental: `engine.backend` lacks its `config:` block.
    "gsheets_default_credentials.yml": Expected(
        INVALID, (error("engine.backend", "config", line=(19, 20)),)
    ),
    "gsheets_service_account.yml": Expected(
        INVALID, (error("engine.backend", "config", line=(25, 26)),)
    ),
    "hubspot_to_logger.yml": Expected(
        INVALID, (error("engine.backend", "config", line=(23, 24)),)
    ),
    "hubspot_incremental_to_bigquery.yml": Expected(
        INVALID, (error("engine.backend", "config", line=(27, 28)),)
    ),
    # sources-kafka--kafka: `table_id` is not an option of bigquery_streaming: rejected.
    # `topic:` (singular) is not a kafka option (that is `topics`): the original ignores it, so
    # once `table_id` is gone the file is accepted with a warning.
    "kafka_to_bigquery_streaming.yml": Expected(
        INVALID,
        (error("destination.config", "table_id", line=28),),
        edited=Edit(Expected(WARNED, (warning("source.topic", line=9),)), blank_lines=(28,)),
    ),
    # sources-kafka--kafka_debezium: as above, plus `record_schema` where the option is
    # `record_schemas`. With both removed, `unnest: true` would need record_schemas and the
    # partition field would not exist, so the edited copy blanks those too.
    "kafka_debezium_to_bigquery_streaming.yml": Expected(
        INVALID,
        (
            error("destination.config", "table_id", line=28),
            error("destination.config", "record_schema", line=(36, 37)),
        ),
        edited=Edit(
            Expected(WARNED, (warning("source.topic", line=8),)),
            blank_lines=(28, 32, 33, 34, *range(35, 49)),
        ),
    ),
    # sources-notion--api_key: no top-level `name`, and the bigquery destination lacks
    # `gcs_buffer_bucket`.
    "notion_pages_without_name.yml": Expected(
        INVALID,
        (
            error("name", line=(1, 4)),
            error("destination.config", "gcs_buffer_bucket", line=(21, 22)),
        ),
    ),
    # sources-notion--api_key_incremental: `engine.backend` lacks its `config:` block.
    "notion_pages_incremental.yml": Expected(
        INVALID, (error("engine.backend", "config", line=(26, 27)),)
    ),
    # sources-periscope--periscope_charts: `x_csrf_token` is required.
    "periscope_without_csrf_token.yml": Expected(
        INVALID, (error("source", "x_csrf_token", line=(3, 4)),)
    ),
    # sources-pokeapi--pokeapi_pokemon_to_json: the file destination has no `filepath` and no
    # `record_schema` (it is `record_schemas`). (Then `unnest: true` without record_schemas is
    # the next error, on line 12.)
    "pokeapi_to_file_unnested.yml": Expected(
        INVALID,
        (
            error("destination.config", "filepath", line=14),
            error("destination.config", "record_schema", line=(15, 16)),
        ),
    ),
    # sources-pokeapi--pokeapi_pokemon_to_logger, sources-sana_ai--sana.
    "pokeapi_to_logger.yml": Expected(VALID),
    "sana_ai_to_file.yml": Expected(VALID),
}

EXIT_CODES = {VALID: 0, WARNED: 0, INVALID: 1}
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
MESSAGE = re.compile(r"^(error|warning): (.*)$")


def validate(bizon_bin: Path, config: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bizon_bin), "config", "validate", str(config), "--skip-references", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def messages(stderr: str) -> list[tuple[str, str]]:
    """(severity, rest of the line) for each `error:` / `warning:` line."""
    found = []
    for line in ANSI_ESCAPE.sub("", stderr).splitlines():
        match = MESSAGE.match(line.strip())
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def is_reported(problem: Problem, file_name: str, reported: list[tuple[str, str]]) -> bool:
    return any(
        severity in problem.severities
        and any(f"{file_name}:{line}:" in text for line in problem.lines)
        and all(mention in text for mention in problem.mentions)
        for severity, text in reported
    )


def check_verdict(result: subprocess.CompletedProcess[str], config: Path, expected: Expected):
    output = f"exit code {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == EXIT_CODES[expected.verdict], output

    reported = messages(result.stderr)
    severities = {severity for severity, _ in reported}
    if expected.verdict != INVALID:
        assert "error" not in severities, output
    if expected.verdict == VALID and not expected.allow_warnings:
        assert "warning" not in severities, output
    missing = [p.describe() for p in expected.problems if not is_reported(p, config.name, reported)]
    assert not missing, f"not reported: {missing}\n{output}"


def edited_copy(file_name: str, directory: Path) -> Path:
    """Writes the edited copy of a file under its own name, so messages name it the same."""
    edit = EXPECTED[file_name].edited
    config = directory / file_name
    config.write_text(edit.apply((SHAPES / file_name).read_text()))
    return config


def test_every_example_has_a_verdict():
    on_disk = {path.name for path in SHAPES.glob("*.yml")}
    assert on_disk, f"no configs found in {SHAPES}"
    assert on_disk == set(EXPECTED), (
        f"without a verdict: {sorted(on_disk - set(EXPECTED))}; "
        f"no longer on disk: {sorted(set(EXPECTED) - on_disk)}"
    )


def test_the_debezium_shape_carries_the_tests_debezium_transform():
    """The kafka_debezium shape's transform is the one the tests run, not a copy drifting away."""
    shape = yaml.safe_load((SHAPES / "kafka_debezium_to_bigquery_streaming.yml").read_text())
    assert shape["transforms"] == [debezium_transform()]


@pytest.mark.parametrize("file_name", sorted(EXPECTED))
def test_example_as_written(bizon_bin: Path, file_name: str):
    config = SHAPES / file_name
    check_verdict(validate(bizon_bin, config), config, EXPECTED[file_name])


@pytest.mark.parametrize(
    "file_name", sorted(name for name, expected in EXPECTED.items() if expected.edited)
)
def test_edited_example(bizon_bin: Path, tmp_path: Path, file_name: str):
    config = edited_copy(file_name, tmp_path)
    check_verdict(validate(bizon_bin, config), config, EXPECTED[file_name].edited.expected)


def warns_predictably(expected: Expected | None) -> bool:
    """Whether the verdict says exactly if warnings appear, so that --strict decides the exit."""
    if expected is None:
        return False
    return expected.verdict == WARNED or (expected.verdict == VALID and not expected.allow_warnings)


STRICT_CASES = [
    (name, False) for name, expected in sorted(EXPECTED.items()) if warns_predictably(expected)
] + [
    (name, True)
    for name, expected in sorted(EXPECTED.items())
    if expected.edited and warns_predictably(expected.edited.expected)
]


@pytest.mark.parametrize(("file_name", "edited"), STRICT_CASES)
def test_strict_fails_only_on_warnings(
    bizon_bin: Path, tmp_path: Path, file_name: str, edited: bool
):
    """--strict turns warnings into a failure; a file without any still passes."""
    expected = EXPECTED[file_name].edited.expected if edited else EXPECTED[file_name]
    config = edited_copy(file_name, tmp_path) if edited else SHAPES / file_name
    result = validate(bizon_bin, config, "--strict")
    output = f"exit code {result.returncode}\nstderr:\n{result.stderr}"
    assert result.returncode == (1 if expected.verdict == WARNED else 0), output
