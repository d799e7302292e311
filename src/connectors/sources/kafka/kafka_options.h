// The kafka source's options: what ReadKafkaOptions() reads from the `source:` block, against
// the declaration of kafka_spec.cc, and the librdkafka settings derived from it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bizon/registry.h"
#include "bizon/source.h"
#include "connectors/sources/kafka/schema_registry.h"

namespace bizon::kafka {

struct TopicRoute {
  std::string name;
  std::string destination_id;
};

/// What ReadKafkaOptions() reads, each option against its declaration in kafka_spec.cc (which
/// holds the defaults: the values here only make a blank struct well-formed for tests).
struct KafkaSourceOptions {
  SyncMode sync_mode = SyncMode::kStream;
  std::vector<TopicRoute> topics;
  std::string bootstrap_servers;
  std::string group_id;
  bool skip_message_empty_value = false;
  bool skip_message_invalid_keys = false;
  bool skip_message_on_decode_error = false;
  int64_t batch_size = 1;
  int64_t consumer_timeout_s = 0;
  bool avro = false;
  /// False: Commit() leaves the group's offsets alone (commit_offsets: production outside
  /// ENVIRONMENT=production).
  bool commit_offsets = true;
  /// Tells apart processes of one pipeline on one host in its static member id (scale-out).
  std::string member;
  /// The librdkafka settings, in order, with the derived ones (bootstrap.servers, group.id,
  /// SASL, group.instance.id) already applied.
  std::vector<std::pair<std::string, std::string>> client_settings;
  /// Where the user wrote each of client_settings ("source.consumer_config.fetch.min.bytes"),
  /// for the error of a setting librdkafka refuses; absent for a setting bizon derived.
  std::map<std::string, std::string, std::less<>> setting_paths;
  SchemaRegistryOptions registry;
};

/// The value of client setting `name`, null when the settings do not name it.
const std::string* FindSetting(const KafkaSourceOptions& options, std::string_view name);

/// Reads the validated `source:` block into options. In stream mode it derives the static
/// member id (group.instance.id) from the pipeline, the host and `member`, unless the
/// consumer_config names one.
Result<KafkaSourceOptions> ReadKafkaOptions(const SourceContext& context);

/// This host's name: HOSTNAME when exported (a pod's name), else gethostname(); empty when
/// neither is known.
std::string HostName();

/// The group.instance.id of one process: `<pipeline>.<host>[.<member>]`, stable across restarts
/// so that a restarted process fences its dead predecessor at once and takes over its
/// partitions. Characters Kafka refuses become `_`; then, or past Kafka's 249 characters, a hash
/// of the exact parts is appended so that distinct inputs keep distinct ids.
std::string StaticMemberId(std::string_view pipeline, std::string_view host,
                           std::string_view member);

/// The declared options of the kafka source (its config spec).
std::vector<FieldSpec> KafkaSourceFields();

/// Before validation (the descriptor's normalize_config): each `streams:` entry's `source.topic`
/// is routed to its `destination.table_id`. An empty `topics` list is filled from the streams,
/// and a topic listed in both takes the stream's table (the streams block wins, as in the
/// original). `config` is the whole raw pipeline config.
void TopicsFromStreams(Value& config);

}  // namespace bizon::kafka
