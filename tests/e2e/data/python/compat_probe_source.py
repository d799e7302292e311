"""For tests/e2e/test_compat_api.py: imports, inside our binary, every module and public name the
test lists (those of the original 0.6.4, read from its files) and emits one record per module
saying what happened: provided, or the ImportError/AttributeError text. A last record holds
bizon._original.ORIGINAL_MODULES, for the test to compare with the original's module list."""

import importlib
import json
from typing import List

from pydantic import Field

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


class ProbeConfig(SourceConfig):
    names_file: str = Field(..., description="JSON: module path (after `bizon.`) -> its public names")


def _outcome(action):
    try:
        action()
    except ImportError as error:
        return {"outcome": "refused", "message": str(error)}
    except AttributeError as error:
        return {"outcome": "missing", "message": str(error)}
    return {"outcome": "provided"}


class ProbeSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["names"]

    @staticmethod
    def get_config_class():
        return ProbeConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        with open(self.config.names_file) as names_file:
            listed = json.load(names_file)
        records = []
        for module_path, names in sorted(listed.items()):
            full = f"bizon.{module_path}"
            found = _outcome(lambda: importlib.import_module(full))
            if found["outcome"] == "provided":
                module = importlib.import_module(full)
                found["names"] = {name: _outcome(lambda name=name: getattr(module, name)) for name in names}
            records.append(SourceRecord(id=module_path, data=found))
        from bizon import _original

        records.append(SourceRecord(id="#original_modules", data={"modules": sorted(_original.ORIGINAL_MODULES)}))
        return SourceIteration(next_pagination={}, records=records)
