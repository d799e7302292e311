"""The machinery that bench/bench.py shares between its cases (bench/cases/):

  runs                one run of one side, measured through bench/spawn.c (run_once), or of
                      several processes of one stream pipeline (run_members)
  verify              the checks of a run's output (out.json, dlt's files, a loaded table)
  records             the records every case moves (the generator's), their YAML and payloads
  core                a case's plan (Plan, Tier, Pending), the Harness that probes our binary,
                      and run_case, which runs a plan: warm-up, then the sides alternately
  report              the statistics, results.md (markdown), plot.png and the environment
  postgres_server     the PostgreSQL server of the postgres, merge and members cases
  kafka_topic         the topic and our kafka source's YAML, for the kafka, members and
                      bigquery-streaming cases
  bigquery_emulators  the BigQuery and GCS emulators of the bigquery cases
"""

from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
