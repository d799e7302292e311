"""Compat case (tests/e2e/test_compat_sources.py): a source that imports the packages the
original installs with itself (pendulum, pytz, orjson, backoff, tenacity, dpath, dateutil,
pydantic-extra-types, yaml, dotenv), with no python_env. One record per package, from a
computation whose result does not depend on the clock. Same records from the original 0.6.4 and
from ours."""

import io
from datetime import datetime
from typing import List

import backoff
import dateutil.parser
import dotenv
import dpath
import orjson
import pendulum
import pytz
import tenacity
import yaml
from pydantic import BaseModel
from pydantic_extra_types.pendulum_dt import DateTime

from bizon.source.config import SourceConfig
from bizon.source.models import SourceIteration, SourceRecord

from compat_base import PlainSource


class Stamped(BaseModel):
    at: DateTime


class PackagesSource(PlainSource):
    @staticmethod
    def streams() -> List[str]:
        return ["packages"]

    @staticmethod
    def get_config_class():
        return SourceConfig

    def get(self, pagination: dict = None) -> SourceIteration:
        tries = {"backoff": 0, "tenacity": 0}

        @backoff.on_exception(backoff.constant, ValueError, max_tries=3, interval=0)
        def flaky_backoff():
            tries["backoff"] += 1
            if tries["backoff"] < 3:
                raise ValueError("again")
            return "done"

        @tenacity.retry(stop=tenacity.stop_after_attempt(4), wait=tenacity.wait_none(), reraise=True)
        def flaky_tenacity():
            tries["tenacity"] += 1
            if tries["tenacity"] < 4:
                raise ValueError("again")
            return "done"

        paris = pytz.timezone("Europe/Paris").localize(datetime(2024, 7, 1, 12, 0))
        moment = pendulum.datetime(2024, 1, 31, 10, 0, tz="America/New_York")
        values = {
            "pendulum": [moment.add(months=1).to_iso8601_string(), moment.in_timezone("UTC").isoformat()],
            "pytz": paris.isoformat(),
            "orjson": orjson.dumps({"b": 1, "a": [1.5, None]}, option=orjson.OPT_SORT_KEYS).decode(),
            "backoff": [flaky_backoff(), tries["backoff"]],
            "tenacity": [flaky_tenacity(), tries["tenacity"]],
            "dpath": dpath.get({"a": {"b": [10, 20]}}, "a/b/1"),
            "dateutil": dateutil.parser.isoparse("2024-02-29T23:59:59Z").isoformat(),
            "pydantic_extra_types": Stamped(at="2024-05-05T05:05:05+02:00").at.in_timezone("UTC").isoformat(),
            "yaml": yaml.safe_load("a: [1, two]\nb: {c: true}"),
            "dotenv": dict(dotenv.dotenv_values(stream=io.StringIO("KEY=value\nOTHER='quoted'\n"))),
        }
        return SourceIteration(next_pagination={}, records=[
            SourceRecord(id=name, data={"value": value}) for name, value in values.items()])
