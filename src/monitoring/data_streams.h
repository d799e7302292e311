// Datadog Data Streams Monitoring (DD_DATA_STREAMS_ENABLED=true with `monitoring.type:
// datadog`), as the original sets it through ddtrace's data-streams API:
//
// * a consume checkpoint for each record a Kafka-shaped source gives (a top-level "topic"
//   string; the pathway context, when a producer upstream set one, in the `dd-pathway-ctx-base64`
//   entry of its "headers" object), with the edge tags type:kafka, topic:<topic>, direction:in,
//   manual_checkpoint:true;
// * at each durable point, a produce checkpoint for each record consumed for a destination id
//   since the last one: type:<destination alias>, topic:<destination id>, direction:out,
//   manual_checkpoint:true, continuing the pathway of the last record consumed for that id (the
//   original's tracer keeps one current context per thread, the last one consumed; it processes
//   one destination id at a time).
//
// A checkpoint hashes its sorted edge tags with the service and env (FNV-1 64) and chains the
// result to its parent's hash; it adds its edge latency, pathway latency and payload size (in
// seconds and bytes) to three DDSketches, aggregated per (edge tags, hash, parent hash) in 10 s
// buckets. The exporter takes them every 10 s and at the end of the run as the msgpack payload
// of `POST /v0.1/pipeline_stats`. The loop detection of the tracers is kept: two checkpoints in a
// row in one direction restart from the last hash of the other direction.
//
// Thread-safety: every member of DataStreams takes its lock; the checkpoints run on the
// pipeline's consumer thread, TakePayload on the monitor's sender thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "bizon/record_batch.h"
#include "monitoring/ddsketch.h"
#include "monitoring/msgpack_writer.h"

namespace bizon {

inline constexpr std::string_view kPathwayHeader = "dd-pathway-ctx-base64";

/// FNV-1 (multiply, then xor), 64 bits: the tracers' pathway hash.
uint64_t Fnv1Hash64(std::string_view bytes);

/// Where a message is on its pathway, and the tracers' loop detection state.
struct PathwayContext {
  uint64_t hash = 0;
  int64_t pathway_start_us = 0;
  int64_t edge_start_us = 0;
  std::string previous_direction;
  uint64_t closest_opposite_hash = 0;
  int64_t closest_opposite_edge_start_us = 0;

  /// A new pathway starting at `now_us` (hash 0).
  static PathwayContext Start(int64_t now_us);
  /// The `dd-pathway-ctx-base64` value: base64 of the hash (8 bytes, little-endian), then the
  /// pathway's and the edge's start in milliseconds since the epoch (zigzag varints). Nullopt
  /// when it does not decode.
  static std::optional<PathwayContext> Decode(std::string_view base64);
  std::string Encode() const;
};

/// The service and env a pathway hash covers (DD_SERVICE, else bizon; DD_ENV, else "none").
struct PathwayNode {
  std::string service = "bizon";
  std::string env = "none";
};

/// What one checkpoint adds to the aggregation.
struct Checkpoint {
  std::vector<std::string> edge_tags;  // Sorted.
  uint64_t hash = 0;
  uint64_t parent_hash = 0;
  double edge_latency_s = 0;
  double pathway_latency_s = 0;
};

/// A checkpoint at `now_us` on `context` (which then points past it), as the tracers set it.
Checkpoint SetCheckpoint(PathwayContext& context, std::vector<std::string> edge_tags,
                         const PathwayNode& node, int64_t now_us);

/// What a record of a Kafka-shaped source carries: its topic and its pathway header.
struct RecordPathway {
  std::optional<std::string> topic;
  std::optional<std::string> pathway;  // The dd-pathway-ctx-base64 header, when a string.
};
/// Reads the top-level "topic" and "headers" members of a record's JSON object (stops once both
/// are read, so a Kafka record's value is not scanned).
RecordPathway ReadRecordPathway(std::string_view payload);

struct DataStreamsOptions {
  std::string service = "bizon";  // DD_SERVICE.
  std::string env;                // DD_ENV: sent as Env when set; hashed as "none" when not.
  std::string version;            // DD_VERSION, sent as Version when set.
  std::string hostname;           // Sent as Hostname.
  std::string tracer_version;
  /// The produce checkpoints' type: destination.alias, else the destination's name.
  std::string destination_type;
  /// The topic of a produce checkpoint for records without a destination id.
  std::string default_destination_id;
};

class DataStreams {
 public:
  static constexpr int64_t kBucketNanos = 10'000'000'000;
  /// Aggregation keys kept per bucket; checkpoints past them are dropped and counted.
  static constexpr size_t kMaxStatsPerBucket = 10'000;

  explicit DataStreams(DataStreamsOptions options);

  /// A consume checkpoint for each record with a topic; every record counts towards the next
  /// produce checkpoints of its destination id.
  void Consume(const RecordBatch& records, int64_t now_us);
  /// The produce checkpoints of the records consumed since the last call.
  void Produce(int64_t now_us);
  /// The msgpack body of POST /v0.1/pipeline_stats with every bucket aggregated so far, which
  /// are then forgotten; empty when there is none.
  std::string TakePayload();
  /// Checkpoints dropped because a bucket held kMaxStatsPerBucket keys.
  int64_t dropped() const;

  /// What is aggregated so far, for tests: each key with its number of checkpoints.
  struct Aggregate {
    Checkpoint key;
    double checkpoints = 0;
  };
  std::vector<Aggregate> Aggregated() const;

 private:
  struct Stats {
    Checkpoint key;
    DDSketch pathway_latency;
    DDSketch edge_latency;
    DDSketch payload_size;
  };
  struct Bucket {
    int64_t start_ns = 0;
    std::vector<Stats> stats;  // In order of first use, as the tracers send them.
    std::unordered_map<std::string, size_t> index;
  };
  struct DestinationPathway {
    std::string id;
    std::optional<PathwayContext> context;  // After the last record consumed for it.
    int64_t pending = 0;                    // Records consumed since its last produce.
  };

  /// Adds `count` identical checkpoints.
  void Add(const Checkpoint& checkpoint, int64_t now_us, double payload_size, double count = 1);
  DestinationPathway& Destination(std::string_view id);
  void AppendBucket(MsgpackWriter& out, const Bucket& bucket) const;

  const DataStreamsOptions options_;
  const PathwayNode node_;
  mutable std::mutex mutex_;
  std::vector<Bucket> buckets_;
  std::vector<DestinationPathway> destinations_;
  size_t last_destination_ = 0;
  int64_t dropped_ = 0;
};

}  // namespace bizon
