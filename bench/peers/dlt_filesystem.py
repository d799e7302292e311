"""What the dlt peers of the rest cases share: a dlt source loaded into dlt's filesystem destination
as uncompressed JSONL in the current directory: pipeline state and load packages under ./dlt
(pipelines_dir), each table's files under ./out/<dataset>/<table>/."""

import os

import dlt


def load_as_jsonl(source, pipeline_name: str, dataset: str = "bench") -> int:
    here = os.getcwd()
    # Plain JSONL files, as the other sides write; dlt compresses them by default.
    os.environ["DATA_WRITER__DISABLE_COMPRESSION"] = "true"
    os.environ["DESTINATION__FILESYSTEM__BUCKET_URL"] = "file://" + os.path.join(here, "out")
    os.environ["RUNTIME__LOG_LEVEL"] = "WARNING"
    pipeline = dlt.pipeline(pipeline_name=pipeline_name, destination="filesystem",
                            dataset_name=dataset, pipelines_dir=os.path.join(here, "dlt"))
    info = pipeline.run(source, loader_file_format="jsonl")
    info.raise_on_failed_jobs()
    return 0
