"""The notion source against tests/fakes/fake_notion.py (Notion API 2025-09-03): the original's two
example configs with a base URL override, every stream of the seed, the incremental reads on
last_edited_time, the block tree with its lineage and markdown, and Notion's rate limit."""

from __future__ import annotations

import json

import pytest
import yaml

from fake_notion import RATE_LIMITED, TOKEN, FakeNotion, uid
from fake_server import Fault
from support.http_sources import retry_lines, run, waits
from support.pipelines import file_destination, load_example, pipeline
from support.results import read_result, source_data

TASKS, NOTES, INLINE = uid("d", 1), uid("d", 2), uid("d", 3)
S1, S2 = uid("b", 101), uid("b", 102)
EXAMPLE_TOKEN = "secret_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"


@pytest.fixture
def notion():
    server = FakeNotion().start()
    yield server
    server.stop()
    assert server.violations == []


def source(notion, stream, **extra):
    return {
        "name": "notion",
        "stream": stream,
        "base_url": f"{notion.url}/v1",
        "authentication": {"type": "api_key", "params": {"token": TOKEN}},
        **extra,
    }


def ids(rows):
    return [row["source_record_id"] for row in rows]


def pages_in_order(notion, *database_ids):
    ws = notion.workspace
    out = []
    for database_id in database_ids:
        for ds in ws.databases[database_id]["data_sources"]:
            out += [p["id"] for p in ws.pages_of(ds["id"])]
    return out


# --------------------------------------------------------------------------------------------
# The original's examples.


def test_example_api_key(bizon):
    notion = FakeNotion(token=EXAMPLE_TOKEN).start()
    try:
        config = load_example("sources-notion--api_key.example.yml")
        config["name"] = "notion pages"  # The example has none; the original rejects it too.
        config["source"]["base_url"] = f"{notion.url}/v1"
        config["source"]["database_ids"] = [TASKS, NOTES]
        config["source"]["page_ids"] = [S2]
        config["destination"] = file_destination("pages")
        run(bizon, yaml.safe_dump(config))
        rows = bizon.read_ndjson("pages.json")
        assert ids(rows) == pages_in_order(notion, TASKS, NOTES) + [S2]
        assert source_data(rows)[-1] == notion.workspace.pages[S2]
        assert notion.violations == []
        assert all(r.headers["notion-version"] == "2025-09-03" for r in notion.requests)
        assert all(r.headers["authorization"] == f"Bearer {EXAMPLE_TOKEN}" for r in notion.requests)
    finally:
        notion.stop()


def test_example_api_key_incremental(bizon):
    notion = FakeNotion(token=EXAMPLE_TOKEN).start()
    try:
        config = load_example("sources-notion--api_key_incremental.example.yml")
        config["source"]["base_url"] = f"{notion.url}/v1"
        config["source"]["database_ids"] = [TASKS]
        config["destination"] = file_destination("pages")
        config.pop("engine")  # The BigQuery backend; the default sqlite one stands in.
        text = yaml.safe_dump(config)

        run(bizon, text)  # First run: no previous job, a full read.
        first = pages_in_order(notion, TASKS)
        assert ids(bizon.read_ndjson("pages.json")) == first

        # Two pages change, one of them outside the configured database: the original's
        # incremental search returns every page edited since the last run.
        notion.requests.clear()
        notion.workspace.touch(first[2])
        notion.workspace.touch(uid("b", 13))
        run(bizon, text)
        rows = bizon.read_ndjson("pages.json")
        assert ids(rows) == first + [uid("b", 13), first[2]]  # newest first
        searches = notion.requests_to("/v1/search")
        assert searches and all(
            r.json["sort"] == {"direction": "descending", "timestamp": "last_edited_time"}
            for r in searches
        )

        notion.requests.clear()
        run(bizon, text)  # Nothing changed since.
        assert len(bizon.read_ndjson("pages.json")) == len(first) + 2
        assert notion.violations == []
    finally:
        notion.stop()


# --------------------------------------------------------------------------------------------
# Full-refresh streams.


def test_users_follow_the_cursor(bizon, notion):
    run(bizon, pipeline("n", source(notion, "users", page_size=2)))
    assert source_data(bizon.read_ndjson("out.json")) == notion.workspace.users
    assert [r.param("start_cursor") is not None for r in notion.requests_to("/v1/users")] == [
        False, False, True, True  # check_connection, then three pages
    ]
    assert {r.param("page_size") for r in notion.requests_to("/v1/users")[1:]} == {"2"}


def test_databases_one_per_iteration(bizon, notion):
    run(bizon, pipeline("n", source(notion, "databases", database_ids=[TASKS, NOTES])))
    assert source_data(bizon.read_ndjson("out.json")) == [
        notion.workspace.databases[TASKS], notion.workspace.databases[NOTES]
    ]


def test_databases_without_ids_warns_and_writes_nothing(bizon, notion):
    result = run(bizon, pipeline("n", source(notion, "databases")))
    assert "No database_ids configured, returning empty results" in result.stderr


def test_data_sources_carry_their_database(bizon, notion):
    run(bizon, pipeline("n", source(notion, "data_sources", database_ids=[TASKS, NOTES])))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert [(r["name"], r["parent_database_id"], r["parent_database_title"]) for r in rows] == [
        ("Tasks", TASKS, "Tasks"), ("Archive", TASKS, "Tasks"), ("Notes", NOTES, "Notes")
    ]


def test_pages_walk_data_sources_then_pages(bizon, notion):
    block = source(notion, "pages", database_ids=[TASKS, NOTES], page_ids=[S1, S2], page_size=2)
    run(bizon, pipeline("n", block))
    assert ids(bizon.read_ndjson("out.json")) == pages_in_order(notion, TASKS, NOTES) + [S1, S2]
    queries = notion.requests_to("/v1/data_sources")
    assert all(r.json["page_size"] == 2 for r in queries)
    assert [r.json.get("start_cursor") is not None for r in queries[:3]] == [False, True, True]


def test_pages_send_the_database_filter(bizon, notion):
    done = {"property": "Status", "select": {"equals": "Done"}}
    block = source(notion, "pages", database_ids=[TASKS], database_filters={TASKS: done})
    run(bizon, pipeline("n", block))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert rows and all(r["properties"]["Status"]["select"]["name"] == "Done" for r in rows)
    assert all(r.json["filter"] == done for r in notion.requests_to("/v1/data_sources"))


@pytest.mark.parametrize("stream, objects", [("all_pages", "page"), ("all_data_sources", "data_source")])
def test_search_streams(bizon, notion, stream, objects):
    run(bizon, pipeline("n", source(notion, stream, page_size=4)))
    ws = notion.workspace
    expected = ws.pages if objects == "page" else ws.data_sources
    assert sorted(ids(bizon.read_ndjson("out.json"))) == sorted(expected)
    assert all("filter" not in r.json for r in notion.requests_to("/v1/search"))


def test_all_databases_come_from_the_data_sources(bizon, notion):
    run(bizon, pipeline("n", source(notion, "all_databases")))
    assert sorted(ids(bizon.read_ndjson("out.json"))) == sorted([TASKS, NOTES, INLINE])


# --------------------------------------------------------------------------------------------
# Blocks.

S1_TREE = [
    # (type, depth, block_order, parent, source page)
    ("heading_1", 0, 0, S1, S1),
    ("paragraph", 0, 1, S1, S1),
    ("bulleted_list_item", 0, 2, S1, S1),
    ("paragraph", 1, 0, "bullet", S1),
    ("to_do", 2, 0, "nested", S1),
    ("to_do", 0, 3, S1, S1),
    ("code", 0, 4, S1, S1),
    ("child_database", 0, 5, S1, S1),
]


def inline_page_tree(page):
    return [
        ("heading_1", 1, 0, page, page),
        ("paragraph", 1, 1, page, page),
        ("bulleted_list_item", 1, 2, page, page),
        ("paragraph", 2, 0, "bullet", page),
        ("to_do", 3, 0, "nested", page),
        ("to_do", 1, 3, page, page),
        ("code", 1, 4, page, page),
    ]


def shape(rows):
    """(type, depth, block_order, parent, source page), parents named for nested items."""
    out = []
    last_of = {}
    for row in rows:
        parent = row["parent_block_id"]
        name = {last_of.get("bulleted_list_item"): "bullet", last_of.get("nested"): "nested"}.get(
            parent, parent)
        out.append((row["type"], row["depth"], row["block_order"], name, row["source_page_id"]))
        if row["type"] == "bulleted_list_item":
            last_of["bulleted_list_item"] = row["id"]
        if row["type"] == "paragraph" and row["depth"] in (1, 2) and name == "bullet":
            last_of["nested"] = row["id"]
    return out


def test_blocks_tree_lineage_and_inline_databases(bizon, notion):
    block = source(notion, "blocks", page_ids=[S1], max_workers=1)
    result = run(bizon, pipeline("n", block))
    rows = source_data(bizon.read_ndjson("out.json"))
    expected = S1_TREE + inline_page_tree(uid("b", 13)) + inline_page_tree(uid("b", 14)) + [
        ("synced_block", 0, 6, S1, S1)
    ]
    assert shape(rows) == expected
    assert [r["page_order"] for r in rows] == list(range(len(rows)))
    assert {r["parent_input_page_id"] for r in rows} == {S1}
    assert {r["parent_input_database_id"] for r in rows} == {None}
    # Each record is the API's block plus the lineage fields.
    first = rows[0]
    original = notion.workspace.children[S1][0]
    assert {k: v for k, v in first.items() if k in original} == original
    # The synced block's children are not shared: a warning, and the run goes on.
    assert "Skipping the children of synced block" in result.stderr


def test_blocks_of_database_pages_in_parallel_batches(bizon, notion):
    block = source(notion, "blocks", database_ids=[NOTES], max_workers=2, page_size=3)
    run(bizon, pipeline("n", block))
    rows = source_data(bizon.read_ndjson("out.json"))
    pages = pages_in_order(notion, NOTES)
    assert [r["source_page_id"] for r in rows] == [p for p in pages for _ in range(7)]
    assert {r["parent_input_database_id"] for r in rows} == {NOTES}
    assert {r["parent_input_page_id"] for r in rows} == {None}


def test_blocks_respect_the_recursion_settings(bizon, notion):
    result = run(bizon, pipeline("n", source(notion, "blocks", page_ids=[S2],
                                             max_recursion_depth=2)))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert max(r["depth"] for r in rows) == 1
    assert "Max recursion depth 2 reached" in result.stderr

    run(bizon, pipeline("n", source(notion, "blocks", page_ids=[S1],
                                    fetch_blocks_recursively=False), file_destination("flat")))
    flat = source_data(bizon.read_ndjson("flat.json"))
    assert [r["type"] for r in flat] == [
        "heading_1", "paragraph", "bulleted_list_item", "to_do", "code", "child_database",
        "synced_block",
    ]


S2_MARKDOWN = [
    "# S2",
    "Plain, **bold** and [a link](https://example.com)",
    "- parent item",
    "*nested*",
    "- [x] deep task",
    "- [ ] open task",
    "```python\nprint('hi')\n```",
    "---",
    "> quoted",
    "> ⚠️ note",
    "$$ e=mc^2 $$",
    "![a cat](https://example.com/cat.png)",
    "[https://example.com/b](https://example.com/b)",
    "[Table - see child blocks for rows]",
    "| k | v |",
    "| a | `1` |",
]


def test_blocks_markdown(bizon, notion):
    run(bizon, pipeline("n", source(notion, "blocks_markdown", page_ids=[S2])))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert [r["markdown"] for r in rows] == S2_MARKDOWN
    first = rows[0]
    assert list(first) == [
        "block_id", "block_type", "markdown", "source_page_id", "parent_block_id",
        "parent_input_database_id", "parent_input_page_id", "depth", "block_order", "page_order",
        "block_raw",
    ]
    assert first["block_type"] == "heading_1"
    assert first["block_raw"]["heading_1"]["rich_text"][0]["plain_text"] == "S2"
    assert first["block_raw"]["source_page_id"] == S2


def test_blocks_markdown_does_not_expand_inline_databases(bizon, notion):
    run(bizon, pipeline("n", source(notion, "blocks_markdown", page_ids=[S1])))
    rows = source_data(bizon.read_ndjson("out.json"))
    assert {r["source_page_id"] for r in rows} == {S1}
    assert "[Database: Inline]" in [r["markdown"] for r in rows]


def test_all_blocks_markdown_reads_the_whole_workspace(bizon, notion):
    run(bizon, pipeline("n", source(notion, "all_blocks_markdown", max_workers=4)))
    rows = source_data(bizon.read_ndjson("out.json"))
    ws = notion.workspace
    assert {r["source_page_id"] for r in rows} == set(ws.pages)
    # Databases are items too (their own children: none in the fake).
    listed = {r.path.split("/")[3] for r in notion.requests_to("/v1/blocks")}
    assert {TASKS, NOTES, INLINE} <= listed


# --------------------------------------------------------------------------------------------
# Incremental.


def incremental(notion, stream, **extra):
    return source(notion, stream, sync_mode="incremental", cursor_field="last_edited_time", **extra)


def test_incremental_markdown_filters_the_queries(bizon, notion):
    done = {"property": "Status", "select": {"equals": "Done"}}
    block = incremental(notion, "blocks_markdown", database_ids=[TASKS, NOTES], page_ids=[S2],
                        database_filters={TASKS: done})
    config = pipeline("n", block)
    run(bizon, config)
    first_run = len(bizon.read_ndjson("out.json"))

    tasks = pages_in_order(notion, TASKS)
    notion.workspace.touch(tasks[0])  # Done
    notion.workspace.touch(tasks[1])  # Todo: filtered out by the database filter
    notion.requests.clear()
    run(bizon, config)
    rows = source_data(bizon.read_ndjson("out.json"))[first_run:]
    assert {r["source_page_id"] for r in rows} == {tasks[0]}
    bodies = {r.path: r.json["filter"] for r in notion.requests_to("/v1/data_sources")}
    tasks_filter = bodies[f"/v1/data_sources/{uid('a', 1)}/query"]
    assert tasks_filter["and"][1] == done
    edited = tasks_filter["and"][0]
    assert edited["timestamp"] == "last_edited_time"
    assert edited["last_edited_time"]["after"].endswith("+00:00")
    assert bodies[f"/v1/data_sources/{uid('a', 3)}/query"] == edited
    # S2 was fetched to compare its last_edited_time, and skipped.
    assert notion.requests_to(f"/v1/pages/{S2}")


def test_incremental_blocks_and_databases_use_the_search(bizon, notion):
    config = pipeline("n", incremental(notion, "blocks", page_ids=[S1]))
    run(bizon, config)
    notion.workspace.touch(S2)
    notion.requests.clear()
    run(bizon, config)
    assert {r["source_page_id"] for r in source_data(bizon.read_ndjson("out.json")[23:])} == {S2}

    config = pipeline("d", incremental(notion, "databases", database_ids=[TASKS]),
                      file_destination("dbs"))
    run(bizon, config)
    notion.workspace.touch(uid("a", 3))  # The Notes data source.
    run(bizon, config)
    assert ids(bizon.read_ndjson("dbs.json")) == [TASKS, NOTES]


def test_incremental_users_falls_back_to_a_full_read(bizon, notion):
    config = pipeline("n", incremental(notion, "users"))
    run(bizon, config)
    result = run(bizon, config)
    assert "Stream users does not support incremental sync, falling back to full refresh" in (
        result.stderr
    )
    assert len(bizon.read_ndjson("out.json")) == 10


# --------------------------------------------------------------------------------------------
# Rate limits and failures.


def test_rate_limit_is_retried_after_retry_after(bizon, notion):
    notion.inject("/v1/search", RATE_LIMITED, times=2)
    result = run(bizon, pipeline("n", source(notion, "all_pages")))
    assert len(bizon.read_ndjson("out.json")) == len(notion.workspace.pages)
    assert waits(result.stderr) == [1.0, 1.0]
    assert all("Retry-After 1 s" in line for line in retry_lines(result.stderr))


def test_rate_limited_for_good_fails_the_run_with_the_last_response(bizon, notion):
    notion.inject("/v1/search", RATE_LIMITED, times=None)
    run(bizon, pipeline("n", source(notion, "all_pages")), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "after 11 attempts" in outcome["error"]
    assert "returned 429 Too Many Requests" in outcome["error"]
    assert "rate_limited" in outcome["error"]
    assert len(notion.requests_to("/v1/search")) == 11
    assert not (bizon.cwd / "out.json").exists()


def test_server_errors_are_retried_with_backoff(bizon, notion):
    notion.inject("/v1/users", Fault(status=502), times=3, when=lambda r: r.param("page_size") != "1")
    result = run(bizon, pipeline("n", source(notion, "users")))
    assert waits(result.stderr) == [0, 4, 8]
    assert len(bizon.read_ndjson("out.json")) == 5


def test_http_block_has_no_effect(bizon, notion):
    notion.inject("/v1/search", RATE_LIMITED, times=1)
    block = source(notion, "all_pages", http={"retries": {"total": 0}})
    result = run(bizon, pipeline("n", block))
    assert "source.http has no effect" in result.stderr
    assert len(bizon.read_ndjson("out.json")) == len(notion.workspace.pages)


def test_a_bad_token_fails_the_connection_check_masked(bizon, notion):
    block = source(notion, "users")
    block["authentication"]["params"]["token"] = "secret_wrong_token_value"
    result = run(bizon, pipeline("n", block), check=1)
    outcome = read_result(bizon.cwd / "result.json")
    assert outcome["failure_class"] == "source"
    assert "error while connecting to source" in outcome["error"]
    assert "401 Unauthorized" in outcome["error"]
    assert "API token is invalid" in outcome["error"]
    assert "secret_wrong_token_value" not in result.stderr + json.dumps(outcome)
    notion.violations.clear()  # The 401 was the point.


def test_notion_version_and_json_headers_on_every_request(bizon, notion):
    run(bizon, pipeline("n", source(notion, "pages", database_ids=[TASKS], page_ids=[S1])))
    assert notion.requests
    for request in notion.requests:
        assert request.headers["notion-version"] == "2025-09-03"
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        if request.method == "POST":
            assert request.headers["content-type"] == "application/json"
