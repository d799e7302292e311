// An in-process fake of the BigQuery Storage Write API v1 (the generated BigQueryWrite service
// on a loopback port), for what the emulator does not do: per-row validation errors, a
// response's `error`, retryable failures of the call followed by success, ALREADY_EXISTS and
// OUT_OF_RANGE on offsets as BigQuery documents them.
//
// It checks each request the way BigQuery would refuse it and records a violation (and answers
// INVALID_ARGUMENT) when one is off-contract: the `x-goog-request-params` routing header
// missing or naming another resource; an AppendRowsRequest without `write_stream`, or naming
// another stream than the call's first request; the first request of a call without
// `writer_schema`; an offset on the default stream; an explicit stream appended to without
// offsets. Offsets follow BigQuery: below the stream's end ALREADY_EXISTS (in the response's
// `error`, the call goes on), past it OUT_OF_RANGE, at it the rows are stored.
//
// Faults are scripted per AppendRows request received, in order (`Script`): end the call with a
// status before answering, answer with an `error`, answer with `row_errors`, or stall first.
//
// Change data capture, as BigQuery documents it (the emulator has none): rows whose writer
// schema has the `_CHANGE_TYPE` pseudo-column are changes, applied to the table's rows by
// primary key instead of appended. The fake refuses them, as BigQuery does, on a stream other
// than `_default`, on a table without a primary key (`DeclarePrimaryKey`, what tables.insert's
// tableConstraints give BigQuery), and a pseudo-column that is not a STRING field; a row whose
// `_CHANGE_TYPE` is not UPSERT or DELETE, or whose `_CHANGE_SEQUENCE_NUMBER` is not up to four
// '/'-separated sections of 1 to 16 hexadecimal digits, is a violation. A key keeps the change
// with the greatest sequence number (compared section by section as numbers; a tie or a
// change without one goes to the later arrival), a DELETE included, so that an older UPSERT
// arriving after it changes nothing.
//
// Thread-safety: the accessors may be called while the server runs.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bizon/status.h"

namespace bizon::testing_support {

class FakeBigQueryWrite {
 public:
  struct Fault {
    /// kStall: wait `stall_ms` before handling the request as usual (a server that stops
    /// answering for a while).
    enum class Kind { kEndCall, kResponseError, kRowErrors, kStall };
    Kind kind = Kind::kEndCall;
    /// A gRPC status code (kEndCall, kResponseError).
    int code = 14;
    std::string message = "fake fault";
    /// kRowErrors: index within the request, and the message.
    std::vector<std::pair<int64_t, std::string>> row_errors;
    int stall_ms = 0;
  };

  /// Starts the server on 127.0.0.1 at a free port. `table_schema` is what GetWriteStream and
  /// CreateWriteStream report: {name, type (Storage API name), mode} per column.
  static std::unique_ptr<FakeBigQueryWrite> Start(
      std::vector<std::vector<std::string>> table_schema);
  ~FakeBigQueryWrite();

  /// host:port.
  std::string endpoint() const;

  /// The next AppendRows requests get these faults, one each, in order; then all succeed.
  void Script(std::vector<Fault> faults);

  /// Serialized rows stored for `stream` (full name), in offset order.
  std::vector<std::string> Rows(const std::string& stream) const;
  /// The rows a reader of `table` (projects/p/datasets/d/tables/t) sees: those of its PENDING
  /// streams once committed, in commit order, then those of its COMMITTED and default streams.
  std::vector<std::string> VisibleRows(const std::string& table) const;
  /// Off-contract requests seen.
  std::vector<std::string> violations() const;
  /// Declares the primary key of `table` (projects/p/datasets/d/tables/t), which CDC rows need.
  void DeclarePrimaryKey(const std::string& table, std::vector<std::string> columns);
  /// The rows of a CDC table after every change applied, as JSON objects (protobuf's JSON
  /// mapping with the columns' own names: int64 values are strings), ordered by key.
  std::vector<std::string> CdcRows(const std::string& table) const;
  /// CDC changes received (UPSERT and DELETE rows, retries and replays included).
  int cdc_changes() const;
  /// AppendRows calls opened, and requests received (retries included).
  int append_calls() const;
  int append_requests() const;
  /// Whether each request received carried a writer schema, in order.
  std::vector<bool> schema_flags() const;
  /// The bearer tokens received (authorization metadata), in order.
  std::vector<std::string> authorizations() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace bizon::testing_support
