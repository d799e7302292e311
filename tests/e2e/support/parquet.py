"""Parquet output read back with pyarrow: the rows of a table directory or of downloaded parts,
and what the tests compare them with."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq


def read_table_dir(path: Path) -> list[dict]:
    """Every row of the part files directly in `path` (hidden files left out), in part order.
    A missing directory has no rows."""
    if not path.is_dir():
        return []
    rows: list[dict] = []
    for part in sorted(path.glob("*.parquet")):
        rows.extend(pq.read_table(part).to_pylist())
    return rows


def read_parts(blobs: list[bytes]) -> list[dict]:
    """Every row of parts given as bytes (downloaded objects), in the order given."""
    rows: list[dict] = []
    for blob in blobs:
        rows.extend(pq.read_table(io.BytesIO(blob)).to_pylist())
    return rows


def schema_of(part: Path | bytes) -> dict[str, str]:
    """Column name -> Arrow type, as text ("timestamp[us, tz=UTC]")."""
    source = io.BytesIO(part) if isinstance(part, bytes) else part
    return {field.name: str(field.type) for field in pq.read_schema(source)}


def codecs_of(part: Path | bytes) -> set[str]:
    """The compression codecs of every column chunk ("ZSTD", "SNAPPY")."""
    source = io.BytesIO(part) if isinstance(part, bytes) else part
    metadata = pq.ParquetFile(source).metadata
    return {metadata.row_group(g).column(c).compression
            for g in range(metadata.num_row_groups) for c in range(metadata.num_columns)}


#: The destination record's columns as Arrow types.
RECORD_SCHEMA = {
    "bizon_id": "string",
    "bizon_extracted_at": "timestamp[us, tz=UTC]",
    "bizon_loaded_at": "timestamp[us, tz=UTC]",
    "source_record_id": "string",
    "source_timestamp": "timestamp[us, tz=UTC]",
    "source_data": "string",
}


def records(rows: list[dict]) -> list[tuple[str, str]]:
    """(source_record_id, source_data) of each row: what a run's output owes its source, whatever
    the format (NDJSON rows have the same keys)."""
    return [(row["source_record_id"], row["source_data"]) for row in rows]
