"""Runs the original bizon's CLI with one change, for the bench's bigquery case only.

The original stages each flush as a Parquet file whose columns come in its record order
(_bizon_id first); real BigQuery matches Parquet columns to the table by name, but the BigQuery
emulator's load job inserts them by position (`INSERT INTO <table> SELECT * FROM
read_parquet(...)`), so the original's loads fail there with a type error. This reorders the
staged frame's columns into the table schema's order (a Polars `select`, no copy of the data)
and changes nothing else.

    python original_parquet_order.py run config.yml [options]   (as `bizon run ...`)
"""

import sys

from bizon.cli.main import cli
from bizon.connectors.destinations.bigquery.src.destination import BigQueryDestination

_rename = BigQueryDestination._rename_for_bq
TABLE_ORDER = ["_source_record_id", "_source_timestamp", "_source_data", "_bizon_extracted_at",
               "_bizon_loaded_at", "_bizon_id"]


def _rename_in_table_order(df):
    renamed = _rename(df)
    return renamed.select(TABLE_ORDER) if set(renamed.columns) == set(TABLE_ORDER) else renamed


BigQueryDestination._rename_for_bq = staticmethod(_rename_in_table_order)

if __name__ == "__main__":
    sys.argv[0] = "bizon"
    sys.exit(cli())
