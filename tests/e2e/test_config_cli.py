"""`bizon config validate`, `config schema`, `config docs`, `secrets check` and the listing
commands, through the real binary."""

import json

import jsonschema
import pytest
import yaml

from support.paths import DATA, EXAMPLES, ROOT, SHAPES
from support.pipelines import quickstart_text

QUICKSTART = quickstart_text()

SEED_FORMS = [
    "seed_hubspot_annotated.yml",
    "seed_notion_incremental.yml",
    "seed_postgres_backend.yml",
    "seed_streams.yml",
]


def validate(bizon, text, *extra, env=None):
    bizon.write("config.yml", text)
    return bizon.run("config", "validate", "config.yml", *extra, env=env)


def test_quickstart_is_valid(bizon):
    result = validate(bizon, QUICKSTART)
    assert result.returncode == 0, result.stderr
    assert "config valid" in result.stdout


@pytest.mark.parametrize("name", SEED_FORMS)
def test_seed_readme_forms_are_valid(bizon_bin, tmp_path, name):
    from conftest import Bizon

    runner = Bizon(bizon_bin, tmp_path)
    result = runner.run("config", "validate", DATA / name, "--skip-references")
    assert result.returncode == 0, result.stderr


def test_sync_mode_typo_names_line_and_suggestion(bizon):
    text = QUICKSTART.replace("  stream: creatures\n", "  stream: creatures\n  sync_mode: incremantal\n")
    result = validate(bizon, text)
    assert result.returncode == 1
    assert (
        "error: config.yml:6: source.sync_mode: expected one of full_refresh, incremental, "
        "stream, got 'incremantal' (did you mean 'incremental'?)" in result.stderr
    )


def test_wrong_type_is_an_error(bizon):
    text = QUICKSTART + "engine:\n  backend:\n    type: sqlite\n    config:\n      database: x\n      schema: y\n      syncCursorInDBEvery: often\n"
    result = validate(bizon, text)
    assert result.returncode == 1
    assert "config.yml:21: engine.backend.config.syncCursorInDBEvery: expected an integer, got 'often'" in result.stderr


def test_unknown_top_level_key_is_an_error(bizon):
    result = validate(bizon, QUICKSTART + "destinaton: {}\n")
    assert result.returncode == 1
    assert "config.yml:15: destinaton: unknown key 'destinaton' (did you mean 'destination'?)" in result.stderr


def test_unknown_source_key_warns_and_fails_with_strict(bizon):
    text = QUICKSTART.replace("  stream: creatures\n", "  stream: creatures\n  page_sise: 10\n")
    result = validate(bizon, text)
    assert result.returncode == 0, result.stderr
    assert "warning: config.yml:6: source.page_sise: unknown key 'page_sise' is ignored" in result.stderr
    strict = bizon.run("config", "validate", "config.yml", "--strict")
    assert strict.returncode == 1
    assert "--strict" in strict.stderr


def test_unknown_destination_key_is_an_error(bizon):
    text = QUICKSTART.replace("    dummy: dummy\n", "    dummy: dummy\n    filepath: out.json\n")
    result = validate(bizon, text)
    assert result.returncode == 1
    assert "config.yml:15: destination.config.filepath: unknown key 'filepath'" in result.stderr


def test_missing_required_keys(bizon):
    result = validate(bizon, "name: x\nsource:\n  name: dummy\n")
    assert result.returncode == 1
    assert "source.stream: required key is missing" in result.stderr
    assert "destination: required key is missing" in result.stderr
    assert "source.authentication: required key is missing" in result.stderr


def test_unknown_stream_is_rejected(bizon):
    result = validate(bizon, QUICKSTART.replace("stream: creatures", "stream: animals"))
    assert result.returncode == 1
    assert "config.yml:5: source.stream: expected one of creatures, plants, got 'animals'" in result.stderr


def test_unknown_connector_lists_known_ones(bizon):
    result = validate(bizon, QUICKSTART.replace("name: dummy", "name: dumy"))
    assert result.returncode == 1
    assert "source.name: expected one of" in result.stderr
    assert "(did you mean 'dummy'?)" in result.stderr


def test_deprecated_reset_warns(bizon):
    text = QUICKSTART.replace("  stream: creatures\n", "  stream: creatures\n  reset: true\n")
    result = validate(bizon, text)
    assert result.returncode == 0, result.stderr
    assert "warning: config.yml:6: source.reset: deprecated" in result.stderr


def test_malformed_yaml_gives_line_and_column(bizon):
    result = validate(bizon, "name: x\nsource: [unclosed\ndestination: {}\n")
    assert result.returncode == 1
    assert "config.yml:" in result.stderr and "malformed YAML" in result.stderr
    # file:line:column
    location = result.stderr.split("config.yml:")[1].split(": malformed")[0]
    line, column = location.split(":")
    assert int(line) >= 2 and int(column) >= 1


def test_empty_file_is_an_error(bizon):
    result = validate(bizon, "")
    assert result.returncode == 1
    assert "config.yml: the file is empty" in result.stderr


def test_missing_file_is_a_usage_error(bizon):
    result = bizon.run("config", "validate", "nope.yml")
    assert result.returncode == 2


def test_bad_reference_is_reported_with_path(bizon):
    text = QUICKSTART.replace("token: dummy_key", "token: env://BIZON_E2E_UNSET_TOKEN")
    result = validate(bizon, text)
    assert result.returncode == 1
    assert (
        "config.yml:9: source.authentication.params.token: failed to resolve reference: "
        "environment variable 'BIZON_E2E_UNSET_TOKEN' is not set" in result.stderr
    )
    skipped = bizon.run("config", "validate", "config.yml", "--skip-references")
    assert skipped.returncode == 0, skipped.stderr


def test_env_file_and_inline_references(bizon):
    bizon.write("vars.env", "BIZON_E2E_TOKEN=from-env-file-123\n")
    text = QUICKSTART.replace("token: dummy_key", 'token: "tok-${env://BIZON_E2E_TOKEN}-${env://BIZON_E2E_TOKEN}"')
    result = validate(bizon, text, "--env-file", "vars.env")
    assert result.returncode == 0, result.stderr


def test_gsm_reference_without_project_is_a_config_error(bizon):
    # Nothing names a GCP project (no secrets block, no GOOGLE_CLOUD_PROJECT, metadata-server
    # credentials that know none): the short form cannot be named, and nothing is requested.
    # tests/e2e/test_gsm_secrets.py resolves references through a fake Secret Manager.
    text = QUICKSTART.replace("token: dummy_key", "token: gsm://my-secret")
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "gsm://my-secret" in l)
    env = {"GOOGLE_APPLICATION_CREDENTIALS": "", "GOOGLE_CLOUD_PROJECT": "", "GCLOUD_PROJECT": "",
           "CLOUDSDK_CONFIG": str(bizon.cwd / "gcloud"), "GCE_METADATA_HOST": "127.0.0.1:1",
           "BIZON_SECRETMANAGER_ENDPOINT": "http://127.0.0.1:1"}
    result = validate(bizon, text, env=env)
    assert result.returncode == 1
    assert (f"config.yml:{line}: source.authentication.params.token: failed to resolve reference: "
            "cannot resolve gsm://my-secret: no GCP project. Set 'secrets.gsm.project_id' in the "
            "config") in result.stderr, result.stderr
    assert "not built" not in result.stderr


def test_secrets_check_masks_and_reports(bizon):
    secret = "very-secret-token-value-42"
    text = QUICKSTART.replace("token: dummy_key", "token: env://BIZON_E2E_SECRET") + (
        "engine:\n  backend:\n    type: sqlite\n    config:\n      database: ${env://BIZON_E2E_MISSING}\n      schema: x\n"
    )
    bizon.write("config.yml", text)
    result = bizon.run("secrets", "check", "config.yml", env={"BIZON_E2E_SECRET": secret})
    assert result.returncode == 1
    assert secret not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any("env://BIZON_E2E_SECRET" in l and "✓" in l and f"({len(secret)} chars)" in l for l in lines), result.stdout
    assert any("env://BIZON_E2E_MISSING" in l and "✗" in l for l in lines), result.stdout
    assert "1 reference(s) failed to resolve" in result.stderr

    ok = bizon.run("secrets", "check", "config.yml", env={"BIZON_E2E_SECRET": secret, "BIZON_E2E_MISSING": "db"})
    assert ok.returncode == 0, ok.stderr
    assert "All 2 reference(s) resolved." in ok.stdout


def test_secrets_check_without_references(bizon):
    bizon.write("config.yml", QUICKSTART)
    result = bizon.run("secrets", "check", "config.yml", check=0)
    assert "No gsm:// / env:// references found in config." in result.stdout


def test_secret_never_appears_in_errors(bizon):
    secret = "hunter2-super-secret"
    text = QUICKSTART.replace("token: dummy_key", "token: env://BIZON_E2E_SECRET").replace(
        "    dummy: dummy\n", "    dummy: env://BIZON_E2E_SECRET\n    bogus: env://BIZON_E2E_SECRET\n"
    )
    bizon.write("config.yml", text)
    result = bizon.run("run", "config.yml", "--result-json", "result.json", env={"BIZON_E2E_SECRET": secret})
    assert result.returncode == 1
    assert secret not in result.stdout + result.stderr
    assert secret not in (bizon.cwd / "result.json").read_text()


def schema(bizon):
    result = bizon.run("config", "schema", check=0)
    return json.loads(result.stdout)


def test_schema_is_valid_json_schema(bizon):
    document = schema(bizon)
    jsonschema.Draft202012Validator.check_schema(document)


def valid_example_files():
    names = [
        "logger_incremental_dummy.yml",
        "cycle_to_file.yml",
        "dummy_to_logger.yml",
        "gbif_to_logger.yml",
        "pokeapi_to_logger.yml",
        "sana_ai_to_file.yml",
    ]
    return [SHAPES / n for n in names] + [DATA / n for n in SEED_FORMS] + [EXAMPLES / "quickstart.yml"]


@pytest.mark.parametrize("path", valid_example_files(), ids=lambda p: p.name)
def test_schema_accepts_valid_configs(bizon, path):
    validator = jsonschema.Draft202012Validator(schema(bizon))
    errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [e.message for e in errors][:3]


@pytest.mark.parametrize(
    "name",
    [
        "pokeapi_to_file_unnested.yml",  # filepath, record_schema
        "periscope_without_csrf_token.yml",  # missing x_csrf_token
        "kafka_to_bigquery_streaming.yml",  # table_id under a streaming destination's config
    ],
)
def test_schema_rejects_invalid_examples(bizon, name):
    validator = jsonschema.Draft202012Validator(schema(bizon))
    assert list(validator.iter_errors(yaml.safe_load((SHAPES / name).read_text())))


def test_schema_rejects_typo(bizon):
    validator = jsonschema.Draft202012Validator(schema(bizon))
    config = yaml.safe_load(QUICKSTART)
    config["source"]["sync_mode"] = "incremantal"
    assert list(validator.iter_errors(config))


def test_docs_reference_is_up_to_date(bizon):
    generated = bizon.run("config", "docs", check=0).stdout
    committed = (ROOT / "docs" / "reference" / "config.md").read_text()
    assert generated == committed, "run `build/dev/bizon config docs > docs/reference/config.md`"


def test_source_and_stream_list(bizon):
    sources = bizon.run("source", "list", check=0).stdout
    assert "Available sources:" in sources
    assert "dummy - ['creatures', 'plants']" in sources
    # hubspot is built (it was the declared-only example here).
    assert "hubspot - ['contacts', 'companies', 'deals', 'tickets', 'products']" in (
        sources.splitlines()
    )
    # The original's ten sources, every one built: listed without the declared-only note.
    listed = {line.split(" - ")[0]: line for line in sources.splitlines() if " - [" in line}
    for name in ["cycle", "dummy", "gbif", "gsheets", "hubspot", "kafka", "notion", "periscope",
                 "pokeapi", "sana_ai"]:
        assert name in listed, sources
        assert "not implemented" not in listed[name], listed[name]
    streams = bizon.run("stream", "list", "generator", check=0).stdout
    assert "[Supports incremental] - records" in streams
    dummy = bizon.run("stream", "list", "dummy", check=0).stdout
    assert "[Full refresh only] - creatures" in dummy
    missing = bizon.run("stream", "list", "nope", check=0).stdout
    assert "Source nope not found." in missing


def test_help_version_and_destination(bizon):
    help_text = bizon.run("--help", check=0).stdout
    assert "Bizon CLI" in help_text
    for command in ["run", "source", "stream", "secrets", "config", "destination"]:
        assert command in help_text
    assert bizon.run("run", "--help", check=0).stdout.count("--result-json") == 1
    assert bizon.run("--version", check=0).stdout.startswith("bizon ")
    assert bizon.run("destination", check=0).returncode == 0
    assert bizon.run("run", "x.yml", "--runner", "rocket").returncode == 2
