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
// A row too large for an AppendRows request is loaded by a load job of its own (its JSON sent
// with the job through the media upload endpoint) whose id is made of the row's source id and
// payload, so a resumed run that fetches it again finds the job done: it too is written once.
// A row BigQuery refuses (row_errors) fails the run, naming the record, and BigQuery's message
// (the column and the reason); nothing of that request or after it is written.
//
// The same class serves `bigquery_streaming` (BigqueryStreamingFlavor::kLegacy, spec 8.2): no
// staging table, every sync mode appends to the final table and Finalize() publishes nothing;
// rows still go through the Storage Write API, exactly-once by default, instead of the original's
// tabledata.insertAll (at-least-once, refused rows dropped without an error).
//
// `max_concurrent_threads` bounds the threads a Write() encodes and appends on: its tables in
// parallel, and a large table's rows split over several PENDING streams that one
// BatchCommitWriteStreams makes visible together.
//
// Thread safety: one instance is used from the consumer's thread only; Write() fans its parts out
// to worker threads and joins them before it returns.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "common/write_disposition.h"
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
  /// 0: kMinBytesPerParallelStream.
  size_t min_bytes_per_stream = 0;
};

/// A committed-stream write spreads a table's rows over several PENDING streams, written in
/// parallel, only when each gets at least this much (payloads and ids).
inline constexpr size_t kMinBytesPerParallelStream = 16 << 20;

/// Which of the original's two streaming destinations an instance is.
enum class BigqueryStreamingFlavor {
  /// bigquery_streaming_v2: staging tables published by SQL on full refresh and incremental.
  kV2,
  /// bigquery_streaming: every sync mode appends to the final table.
  kLegacy,
};

/// The write_mode option of both streaming destinations.
FieldSpec BigqueryWriteModeField();

/// The options of the streaming destination of `flavor`, declared once: its registration hands
/// them to the registry and Create() reads the block against them.
std::vector<FieldSpec> BigqueryStreamingFields(BigqueryStreamingFlavor flavor);

/// The `_CHANGE_SEQUENCE_NUMBER` of a change data capture row, in the form BigQuery documents:
/// up to four sections of up to 16 hexadecimal digits separated by '/', compared section by
/// section; here each section is written with all 16 digits, upper case. A kafka record's is
/// its partition then its offset: the changes of one key (one partition) in offset order.
std::string ChangeSequenceNumber(const std::vector<uint64_t>& sections);

/// CDC pseudo-columns of the Storage Write API rows of a merging table.
inline constexpr std::string_view kChangeTypeColumn = "_CHANGE_TYPE";
inline constexpr std::string_view kChangeSequenceColumn = "_CHANGE_SEQUENCE_NUMBER";

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
    /// default_stream: the table's long-lived AppendRows connection, opened by the first write
    /// and kept while it works (every request is acknowledged before Write() returns).
    std::unique_ptr<AppendStream> default_append;
    TablePolicy policy;
    /// write_disposition merge: rows are changes (_CHANGE_TYPE, _CHANGE_SEQUENCE_NUMBER) written
    /// to the table itself through its default stream, which BigQuery's CDC requires.
    bool cdc = false;
  };

  /// Rows of one table that one thread encodes and appends: on a committed stream into a
  /// PENDING stream of their own (`stream`, once finalized), else into the default stream.
  struct WritePart {
    TableState* table = nullptr;
    std::vector<size_t> rows;
    std::string stream;
    /// Rows too large for an AppendRows request (indices into the batch), and their JSON.
    std::vector<size_t> large_records;
    std::vector<std::string> large_json;
  };

  BigqueryStreamingV2Destination(const DestinationContext& context, BigqueryStreamingFlavor flavor);
  /// Reads the options of `config` against the declaration of the destination's flavor.
  Status ReadOptions(const Value& config);
  /// Whether Write() goes to a staging table that Finalize() publishes.
  bool Staged() const;
  /// With a partition_problem_: OK when `main` exists and is kept (not replaced under
  /// enforce_partitioning), since BigQuery keeps an existing table's layout; else the config
  /// error, as a table cannot be created with that partitioning.
  Status RefuseBadPartitionFor(const BigQueryTableRef& main, bool replaces);
  /// Whether `table` is written through the default stream (write_mode, or CDC).
  bool DefaultStream(const TableState& table) const { return !committed_ || table.cdc; }
  /// The JSON rows `part` writes for rows [from, to) of its records: the record (raw or
  /// unnested), or for a CDC table its change (nothing for a tombstone). `sources`: the index in
  /// part.rows of each row produced.
  Status RowsOf(const WritePart& part, const RecordBatch& records, size_t from, size_t to,
                int64_t loaded_at_us, std::vector<std::string>& rows,
                std::vector<size_t>& sources) const;

  Result<TableState*> TableFor(std::string_view destination_id);
  Status Prepare(TableState& table);
  /// The parts `rows` of `records` (all for `table`) are written in.
  std::vector<WritePart> SplitRows(TableState& table, const RecordBatch& records,
                                   const std::vector<size_t>& rows) const;
  /// Encodes and appends a part; on a committed stream, finalizes its stream and checks its row
  /// count. Runs on a worker thread: touches only its part and its table's default stream.
  Status WriteRows(WritePart& part, const RecordBatch& records, int64_t loaded_at_us);
  /// Encodes the part's rows and appends them to `stream` a request's worth at a time, then
  /// waits for every acknowledgement; the rows too large for a request go to the part's
  /// large_records. How many rows were sent.
  Result<int64_t> SendRows(AppendStream& stream, WritePart& part, const RecordBatch& records,
                           int64_t loaded_at_us) const;
  /// Commits the streams `state` names that this instance has not committed; `resuming`: the
  /// state of a dead run, whose streams BigQuery may have forgotten since.
  Status CommitStreams(const Value& state, bool resuming);
  /// Commits one stream; already committed is success, and so is a forgotten one when resuming.
  Status CommitStream(const TableState& table, const std::string& name, bool resuming);
  /// Whether BatchCommitWriteStreams refused `stream` because it is committed already.
  bool AlreadyCommitted(const Status& refused, const std::string& stream);
  /// Loads the part's rows too large for an AppendRows request, a load job each.
  Status LoadLargeRows(const WritePart& part, const RecordBatch& records);
  Result<BigQueryJob> RunStatement(const std::string& job_id, const std::string& sql);
  Status Publish(TableState& table);
  Value CurrentState() const;

  SyncMetadata sync_;
  /// The monitor's large-records count (rows loaded by a job of their own); may be null.
  std::function<void(int64_t rows, std::string_view destination_id)> large_records_;
  BigqueryStreamingFlavor flavor_;
  /// The destination's name, for log lines.
  std::string_view name_;
  BigqueryStreamingV2Connection connection_;
  // The options, set by ReadOptions() from the declaration's defaults and the block.
  std::string project_;
  std::string dataset_;
  std::string dataset_location_;
  bool enforce_partitioning_ = false;
  bool committed_ = false;
  int64_t max_rows_per_request_ = 0;
  int64_t max_threads_ = 0;
  size_t min_bytes_per_stream_ = kMinBytesPerParallelStream;
  std::string table_prefix_;
  std::string service_account_key_;
  std::string default_destination_id_;
  bool unnest_ = false;
  std::optional<BigQueryTimePartitioning> partitioning_;
  /// Non-empty: why time_partitioning cannot partition these tables (a warning at start, as the
  /// original gives); partitioning_ is then unset.
  std::string partition_problem_;
  BigqueryRecordSchemas schemas_;
  TablePolicies policies_;
  /// max_staleness of the CDC tables this destination creates (INTERVAL text); empty: none.
  std::string max_staleness_;
  /// When this instance opened: the first section of a non-kafka change's sequence number, so
  /// that a later run's changes order after an earlier run's.
  int64_t opened_at_us_ = 0;

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
