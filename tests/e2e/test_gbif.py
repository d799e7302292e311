"""The gbif source against tests/fakes/fake_gbif.py (GBIF API v1 occurrence search): the
original's example config with a base URL override, the page and record caps, record ids."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_gbif import FakeGbif, occurrence
from fake_server import Fault
from support.http_sources import run
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result


@pytest.fixture
def gbif():
    server = FakeGbif().start()
    yield server
    server.stop()
    assert server.violations == []


def source(gbif, **extra):
    return {"name": "gbif", "stream": "occurrence", "base_url": f"{gbif.url}/v1", **extra}


def pages(gbif):
    return [(r.param("offset"), r.param("limit")) for r in gbif.requests_to("/v1/occurrence/search")]


def test_example_occurrence_to_logger(bizon, gbif):
    config = load_example("sources-gbif--gbif_occurrence_to_logger.example.yml")
    config["source"]["base_url"] = f"{gbif.url}/v1"
    # The example logs the records; the file destination lets the test read them back.
    config["destination"] = file_destination("occurrences")
    run(bizon, yaml.safe_dump(config))
    rows = bizon.read_ndjson("occurrences.json")
    assert len(rows) == 1000
    assert [json.loads(row["source_data"]) for row in rows] == [occurrence(i) for i in range(1000)]
    assert [row["source_record_id"] for row in rows[:2]] == ["4000000000", "4000000001"]
    # check_connection and the count (limit=0), then 300, 300, 300 and the last 100.
    assert pages(gbif) == [
        (None, "0"), (None, "0"), ("0", "300"), ("300", "300"), ("600", "300"), ("900", "100")
    ]


def test_example_as_shipped_runs_with_the_logger(bizon, gbif):
    config = load_example("sources-gbif--gbif_occurrence_to_logger.example.yml")
    config["source"]["base_url"] = f"{gbif.url}/v1"
    result = run(bizon, yaml.safe_dump(config))
    assert result.stderr.count('"scientificName"') == 1000


def test_end_of_records_stops_before_the_cap(bizon, gbif):
    gbif.count = 450
    run(bizon, pipeline("gbif", source(gbif)))
    assert len(bizon.read_ndjson("out.json")) == 450
    assert pages(gbif)[2:] == [("0", "300"), ("300", "300")]


def test_page_limit_is_capped_at_300(bizon, gbif):
    gbif.count = 700
    run(bizon, pipeline("gbif", source(gbif, page_limit=1000, max_records=650)))
    assert pages(gbif)[2:] == [("0", "300"), ("300", "300"), ("600", "50")]
    assert len(bizon.read_ndjson("out.json")) == 650


def test_record_ids_fall_back_to_gbif_id_then_position(bizon, gbif):
    gbif.count = 10
    gbif.no_key = {3}
    gbif.no_ids = {7}
    run(bizon, pipeline("gbif", source(gbif, page_limit=5)))
    ids = [row["source_record_id"] for row in bizon.read_ndjson("out.json")]
    assert ids[3] == "4000000003"  # gbifID, a string in the API
    assert ids[7] == "5_2"  # offset 5, third of its page
    assert ids[0] == "4000000000"


def test_a_failing_page_fails_the_run_and_publishes_nothing(bizon, gbif):
    gbif.inject("/v1/occurrence/search", Fault(status=502, body="<html>Bad gateway</html>"),
                times=None, when=lambda request: request.param("offset") == "300")
    run(bizon, pipeline("gbif", source(gbif, max_records=900, http={"retries": {"total": 1}})),
        check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "returned 502 Bad Gateway" in outcome["error"]
    assert "<html>Bad gateway</html>" in outcome["error"]
    assert not (bizon.cwd / "out.json").exists()


def test_total_count_is_reported(bizon, gbif):
    result = run(bizon, pipeline("gbif", source(gbif, max_records=300)))
    # The count (2500) drives the progress percentage.
    assert "300 records" in result.stderr and "12.0%" in result.stderr
