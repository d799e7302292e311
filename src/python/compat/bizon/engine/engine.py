"""The original's entry point for running a pipeline from Python. RunnerFactory is not provided:
the binary's engine is C++ and is not loadable into a Python process. Run `bizon run <config.yml>
--result-json <file>` as a subprocess instead (migration.md shows a wrapper for Airflow-style
schedulers)."""

from os import getenv

from bizon._original import ENGINE, refuse_names


def replace_env_variables_in_config(config: dict) -> dict:
    """Replaces, in place and recursively through mappings, every string value that starts with
    BIZON_ENV_ by the environment variable of that name (None when unset)."""
    for key, value in config.items():
        if isinstance(value, dict):
            config[key] = replace_env_variables_in_config(value)
        elif isinstance(value, str) and value.startswith("BIZON_ENV_"):
            config[key] = getenv(value)
    return config


__getattr__ = refuse_names(__name__, {
    "RunnerFactory": ENGINE + "; from a Python scheduler, run it as a subprocess and read --result-json",
    "resolve_config": "the binary resolves BIZON_ENV_, env:// and gsm:// references before a source sees its "
                      "config (`bizon secrets check` shows them)",
})
