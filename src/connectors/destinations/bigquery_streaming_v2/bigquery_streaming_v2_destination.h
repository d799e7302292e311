// The bigquery_streaming_v2 destination: rows appended with the BigQuery Storage Write API as
// protobuf rows (ProtoRowEncoder), into the table's staging table; Finalize() publishes it with
// SQL.
//
// | sync mode                  | Write() appends to      | Finalize()                            |
// |----------------------------|-------------------------|---------------------------------------|
// | full refresh (and a reset) | `<table>_temp`          | CREATE OR REPLACE TABLE ... AS SELECT |
// | incremental                | `<table>_incremental`   | INSERT INTO <table> SELECT            |
// | stream                     | `<table>`               | nothing                               |
//
// Tables are created as the bigquery destination creates them (bigquery_common/
// bigquery_tables.h: schema, partitioning, clustering, staging tables owned by the pipeline job),
// and OnJobSucceeded() drops the staging tables.
//
// `write_mode: committed_stream` (the default) is exactly-once: each Write() appends its rows to
// a PENDING write stream of its own (explicit offsets from 0) and finalizes it; the state it
// returns, recorded with the destination cursor, names the streams not yet committed, and
// OnCursorRecorded() commits them once the cursor is recorded. Rows a run wrote after its last
// recorded cursor stay in streams nobody commits, so a resumed run writes them again whatever
// order it fetches them in (a kafka source interleaves its partitions differently each run).
// Open() commits the streams of the resumed state again (an already committed one is success).
// `write_mode: default_stream` appends to `_default` as the original does: at-least-once (a
// retried or resumed append may be written twice), no stream to create. See README.md.
//
// A row too large for an AppendRows request is loaded by a load job (its JSON sent with the job
// through the media upload endpoint) under a deterministic job id, so it too is written once.
// A row BigQuery refuses (row_errors) fails the run, naming the record, and BigQuery's message
// (the column and the reason); nothing of that request or after it is written.
//
// The same class serves `bigquery_streaming` (BigqueryStreamingFlavor::kLegacy, spec 8.2): no
// staging table, every sync mode appends to the final table and Finalize() publishes nothing;
// rows still go through the Storage Write API, exactly-once by default, instead of the original's
// tabledata.insertAll (at-least-once, refused rows dropped without an error).
//
// Thread safety: one instance is used from the consumer's thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "connectors/destinations/bigquery/bigquery_load_schema.h"
#include "connectors/destinations/bigquery_common/bigquery_tables.h"
#include "google/bigquery_client.h"
#include "google/bigquery_write_client.h"
#include "google/proto_rows.h"

namespace bizon {

/// Where the destination's clients connect, for tests: empty keeps the emulator variables or
/// production.
struct BigqueryStreamingV2Connection {
  /// scheme://host:port of the REST API.
  std::string bigquery_endpoint;
  /// host:port of the Storage Write API (plaintext).
  std::string storage_endpoint;
  /// 0: the client's default (9.5 MiB).
  size_t max_request_bytes = 0;
  /// Instead of the configured key or Application Default Credentials.
  std::shared_ptr<GoogleCredentials> credentials;
};

/// Which of the original's two streaming destinations an instance is.
enum class BigqueryStreamingFlavor {
  /// bigquery_streaming_v2: staging tables published by SQL on full refresh and incremental.
  kV2,
  /// bigquery_streaming: every sync mode appends to the final table.
  kLegacy,
};

/// The write_mode option of both streaming destinations.
FieldSpec BigqueryWriteModeField();

class BigqueryStreamingV2Destination final : public Destination {
 public:
  /// Checks the config (record_schemas, partitioning, clustering); connects in Open().
  static Result<std::unique_ptr<BigqueryStreamingV2Destination>> Create(
      const DestinationContext& context, BigqueryStreamingV2Connection connection = {},
      BigqueryStreamingFlavor flavor = BigqueryStreamingFlavor::kV2);
  ~BigqueryStreamingV2Destination() override;
  BigqueryStreamingV2Destination(const BigqueryStreamingV2Destination&) = delete;
  BigqueryStreamingV2Destination& operator=(const BigqueryStreamingV2Destination&) = delete;

  Status Open(const Value& resume_state) override;
  Result<Value> Write(const RecordBatch& records, int64_t loaded_at_us) override;
  /// Commits the PENDING streams of the writes `state` covers (idempotent).
  Status OnCursorRecorded(const Value& state) override;
  Status Finalize() override;
  Status OnJobSucceeded() override;

 private:
  struct TableState {
    BigQueryTableRef main;
    BigQueryTableRef staging;
    std::vector<BqColumn> columns;
    std::vector<std::string> clustering;
    std::optional<ProtoRowSchema> schema;
    bool prepared = false;
    /// committed_stream: the PENDING streams written and finalized but not yet committed (the
    /// writes since the last recorded cursor), oldest first.
    std::vector<std::string> uncommitted;
  };

  BigqueryStreamingV2Destination(const DestinationContext& context, BigqueryStreamingFlavor flavor);
  /// Whether Write() goes to a staging table that Finalize() publishes.
  bool Staged() const;

  Result<TableState*> TableFor(std::string_view destination_id);
  Status Prepare(TableState& table);
  Status AppendRows(TableState& table, const RecordBatch& records, const std::vector<size_t>& rows,
                    int64_t loaded_at_us);
  /// Appends `serialized` (rows `rows` of `records`) to the PENDING stream `pending` from offset
  /// 0, or to the table's default stream when `pending` is empty; sets `oversized` to the indices
  /// of rows too large to send. Returns how many rows were sent.
  Result<int64_t> SendRows(TableState& table, const RecordBatch& records,
                           const std::vector<size_t>& rows,
                           const std::vector<std::string>& serialized, const std::string& pending,
                           std::vector<size_t>& oversized);
  /// Commits the streams `state` names that this instance has not committed; `resuming`: the
  /// state of a dead run, whose streams BigQuery may have forgotten since.
  Status CommitStreams(const Value& state, bool resuming);
  /// Whether BatchCommitWriteStreams refused `stream` because it is committed already.
  bool AlreadyCommitted(const Status& refused, const std::string& stream);
  Status LoadLargeRows(TableState& table, const std::string& job_id,
                       const std::vector<std::string>& json_rows);
  Result<BigQueryJob> RunStatement(const std::string& job_id, const std::string& sql);
  Status Publish(TableState& table);
  Value CurrentState() const;

  SyncMetadata sync_;
  BigqueryStreamingFlavor flavor_;
  /// The destination's name, for log lines.
  std::string_view name_;
  BigqueryStreamingV2Connection connection_;
  std::string project_;
  std::string dataset_;
  std::string dataset_location_;
  bool enforce_partitioning_ = false;
  bool committed_ = true;
  int64_t max_rows_per_request_ = 5000;
  std::string table_prefix_;
  std::string service_account_key_;
  std::string default_destination_id_;
  bool unnest_ = false;
  std::optional<BigQueryTimePartitioning> partitioning_;
  BigqueryRecordSchemas schemas_;

  std::unique_ptr<BigQueryClient> bigquery_;
  std::unique_ptr<BigQueryWriteClient> writer_;
  std::string job_location_;
  std::string default_table_;
  std::map<std::string, TableState, std::less<>> tables_;
  /// Streams committed by this instance, so that a repeated OnCursorRecorded() sends nothing.
  std::set<std::string, std::less<>> committed_streams_;
  int64_t writes_ = 0;
};

}  // namespace bizon
