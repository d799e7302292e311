#include "monitoring/data_streams.h"

#include <algorithm>
#include <limits>

#include "bizon/value.h"

namespace bizon {
namespace {

constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void AppendLittleEndian64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void AppendZigzagVarint(std::string& out, int64_t value) {
  uint64_t bits = (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
  while (bits >= 0x80) {
    out.push_back(static_cast<char>((bits & 0x7f) | 0x80));
    bits >>= 7;
  }
  out.push_back(static_cast<char>(bits));
}

/// A zigzag varint as the tracers read it: at most nine bytes, the ninth taken whole.
std::optional<int64_t> ReadZigzagVarint(std::string_view& data) {
  uint64_t bits = 0;
  int shift = 0;
  for (size_t i = 0; i < 9 && i < data.size(); ++i) {
    auto byte = static_cast<uint8_t>(data[i]);
    if (byte < 0x80 || i == 8) {
      bits |= uint64_t{byte} << shift;
      data.remove_prefix(i + 1);
      return static_cast<int64_t>((bits >> 1) ^ (~(bits & 1) + 1));
    }
    bits |= uint64_t{byte & 0x7fU} << shift;
    shift += 7;
  }
  return std::nullopt;
}

/// Milliseconds since the epoch as microseconds; nullopt past what microseconds hold.
std::optional<int64_t> MillisToMicros(int64_t millis) {
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 1000;
  if (millis > kLimit || millis < -kLimit) return std::nullopt;
  return millis * 1000;
}

/// Standard base64 with padding (the header's encoding), and its inverse: nullopt for
/// anything else.
std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      group |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kBase64Alphabet[(group >> 18) & 63]);
    out.push_back(kBase64Alphabet[(group >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kBase64Alphabet[(group >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kBase64Alphabet[group & 63] : '=');
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') {
    ++padding;
  }
  std::string out;
  uint32_t group = 0;
  for (size_t i = 0; i < text.size() - padding; ++i) {
    size_t digit = kBase64Alphabet.find(text[i]);
    if (digit == std::string_view::npos) return std::nullopt;
    group = (group << 6) | static_cast<uint32_t>(digit);
    if (i % 4 == 3) {
      out.push_back(static_cast<char>((group >> 16) & 0xff));
      out.push_back(static_cast<char>((group >> 8) & 0xff));
      out.push_back(static_cast<char>(group & 0xff));
      group = 0;
    }
  }
  if (padding == 1) {  // Three digits left: 18 bits, two bytes.
    out.push_back(static_cast<char>((group >> 10) & 0xff));
    out.push_back(static_cast<char>((group >> 2) & 0xff));
  } else if (padding == 2) {  // Two digits left: 12 bits, one byte.
    out.push_back(static_cast<char>((group >> 4) & 0xff));
  }
  return out;
}

uint64_t PathwayHash(const PathwayNode& node, const std::vector<std::string>& sorted_tags,
                     uint64_t parent_hash) {
  std::string bytes = node.service + node.env;
  for (const std::string& tag : sorted_tags) bytes += tag;
  std::string chained;
  AppendLittleEndian64(chained, Fnv1Hash64(bytes));
  AppendLittleEndian64(chained, parent_hash);
  return Fnv1Hash64(chained);
}

// A minimal walk over the top level of a JSON object: enough to find two members' values
// without parsing the others.
size_t SkipSpace(std::string_view text, size_t at) {
  while (at < text.size() &&
         (text[at] == ' ' || text[at] == '\t' || text[at] == '\n' || text[at] == '\r')) {
    ++at;
  }
  return at;
}

/// `at` on an opening quote: the index after the closing one (npos when there is none).
size_t SkipString(std::string_view text, size_t at) {
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  return std::string_view::npos;
}

/// `at` on a value: the index after it (npos when the text ends first).
size_t SkipValue(std::string_view text, size_t at) {
  if (at >= text.size()) return std::string_view::npos;
  if (text[at] == '"') return SkipString(text, at);
  if (text[at] != '{' && text[at] != '[') {
    while (at < text.size() && text[at] != ',' && text[at] != '}' && text[at] != ']') ++at;
    return at;
  }
  int depth = 0;
  while (at < text.size()) {
    char c = text[at];
    if (c == '"') {
      at = SkipString(text, at);
      if (at == std::string_view::npos) return at;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if ((c == '}' || c == ']') && --depth == 0) return at + 1;
    ++at;
  }
  return std::string_view::npos;
}

void ReadMember(std::string_view key, std::string_view value, RecordPathway& found,
                bool& headers_read) {
  if (key == "topic") {
    auto topic = Value::FromJson(value);
    if (topic && topic->is_string()) found.topic = topic->AsString();
  } else if (key == "headers") {
    headers_read = true;
    auto headers = Value::FromJson(value);
    if (!headers || !headers->is_map()) return;
    const Value* pathway = headers->Find(kPathwayHeader);
    if (pathway != nullptr && pathway->is_string()) found.pathway = pathway->AsString();
  }
}

}  // namespace

uint64_t Fnv1Hash64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char byte : bytes) {
    hash *= 0x100000001b3ULL;
    hash ^= static_cast<uint8_t>(byte);
  }
  return hash;
}

PathwayContext PathwayContext::Start(int64_t now_us) {
  return {.pathway_start_us = now_us,
          .edge_start_us = now_us,
          .closest_opposite_edge_start_us = now_us};
}

std::optional<PathwayContext> PathwayContext::Decode(std::string_view base64) {
  std::optional<std::string> bytes = Base64Decode(base64);
  if (!bytes || bytes->size() < 8) return std::nullopt;
  uint64_t hash = 0;
  for (int i = 7; i >= 0; --i) hash = (hash << 8) | static_cast<uint8_t>((*bytes)[i]);
  std::string_view rest = std::string_view(*bytes).substr(8);
  std::optional<int64_t> pathway_start_ms = ReadZigzagVarint(rest);
  std::optional<int64_t> edge_start_ms =
      pathway_start_ms ? ReadZigzagVarint(rest) : std::optional<int64_t>();
  if (!edge_start_ms) return std::nullopt;
  std::optional<int64_t> pathway_start = MillisToMicros(*pathway_start_ms);
  std::optional<int64_t> edge_start = MillisToMicros(*edge_start_ms);
  if (!pathway_start || !edge_start) return std::nullopt;
  return PathwayContext{.hash = hash,
                        .pathway_start_us = *pathway_start,
                        .edge_start_us = *edge_start,
                        .closest_opposite_edge_start_us = *edge_start};
}

std::string PathwayContext::Encode() const {
  std::string bytes;
  AppendLittleEndian64(bytes, hash);
  AppendZigzagVarint(bytes, pathway_start_us / 1000);
  AppendZigzagVarint(bytes, edge_start_us / 1000);
  return Base64Encode(bytes);
}

Checkpoint SetCheckpoint(PathwayContext& context, std::vector<std::string> edge_tags,
                         const PathwayNode& node, int64_t now_us) {
  std::sort(edge_tags.begin(), edge_tags.end());
  std::string direction;
  for (const std::string& tag : edge_tags) {
    if (tag.starts_with("direction:")) {
      direction = tag;
      break;
    }
  }
  if (direction == context.previous_direction) {
    // A second checkpoint in the same direction (producing twice without consuming between)
    // hangs off the last checkpoint of the other direction, so a loop does not grow the pathway.
    context.hash = context.closest_opposite_hash;
    if (context.hash == 0) {
      context.edge_start_us = now_us;
      context.pathway_start_us = now_us;
    } else {
      context.edge_start_us = context.closest_opposite_edge_start_us;
    }
  } else {
    context.previous_direction = direction;
    context.closest_opposite_hash = context.hash;
    context.closest_opposite_edge_start_us = now_us;
  }
  Checkpoint checkpoint{.parent_hash = context.hash};
  checkpoint.hash = PathwayHash(node, edge_tags, checkpoint.parent_hash);
  checkpoint.edge_latency_s =
      static_cast<double>(std::max<int64_t>(now_us - context.edge_start_us, 0)) / 1e6;
  checkpoint.pathway_latency_s =
      static_cast<double>(std::max<int64_t>(now_us - context.pathway_start_us, 0)) / 1e6;
  checkpoint.edge_tags = std::move(edge_tags);
  context.hash = checkpoint.hash;
  context.edge_start_us = now_us;
  return checkpoint;
}

RecordPathway ReadRecordPathway(std::string_view payload) {
  RecordPathway found;
  size_t at = SkipSpace(payload, 0);
  if (at >= payload.size() || payload[at] != '{') return found;
  bool headers_read = false;
  at = SkipSpace(payload, at + 1);
  while (at < payload.size() && payload[at] == '"') {
    size_t key_end = SkipString(payload, at);
    if (key_end == std::string_view::npos) break;
    std::string_view key = payload.substr(at + 1, key_end - at - 2);
    at = SkipSpace(payload, key_end);
    if (at >= payload.size() || payload[at] != ':') break;
    at = SkipSpace(payload, at + 1);
    size_t value_end = SkipValue(payload, at);
    if (value_end == std::string_view::npos) break;
    ReadMember(key, payload.substr(at, value_end - at), found, headers_read);
    if (found.topic && headers_read) break;
    at = SkipSpace(payload, value_end);
    if (at >= payload.size() || payload[at] != ',') break;
    at = SkipSpace(payload, at + 1);
  }
  return found;
}

DataStreams::DataStreams(DataStreamsOptions options)
    : options_(std::move(options)),
      node_{.service = options_.service, .env = options_.env.empty() ? "none" : options_.env} {}

DataStreams::DestinationPathway& DataStreams::Destination(std::string_view id) {
  // A handful of ids at most; runs of one id are the common case.
  if (last_destination_ >= destinations_.size() || destinations_[last_destination_].id != id) {
    auto found = std::find_if(destinations_.begin(), destinations_.end(),
                              [&](const DestinationPathway& entry) { return entry.id == id; });
    if (found == destinations_.end()) {
      found = destinations_.insert(destinations_.end(), DestinationPathway{.id = std::string(id)});
    }
    last_destination_ = static_cast<size_t>(found - destinations_.begin());
  }
  return destinations_[last_destination_];
}

void DataStreams::Consume(const RecordBatch& records, int64_t now_us) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < records.size(); ++i) {
    DestinationPathway& destination =
        Destination(records.has_destination_ids() ? records.destination_id(i) : "");
    ++destination.pending;
    RecordPathway found = ReadRecordPathway(records.payload(i));
    if (!found.topic) continue;  // Not Kafka-shaped: nothing to consume from.
    std::optional<PathwayContext> context;
    if (found.pathway) context = PathwayContext::Decode(*found.pathway);
    if (!context) context = PathwayContext::Start(now_us);
    Add(SetCheckpoint(
            *context,
            {"type:kafka", "topic:" + *found.topic, "direction:in", "manual_checkpoint:true"},
            node_, now_us),
        now_us, 0);
    destination.context = std::move(context);
  }
}

void DataStreams::Produce(int64_t now_us) {
  std::lock_guard lock(mutex_);
  for (DestinationPathway& destination : destinations_) {
    if (destination.pending == 0) continue;
    std::vector<std::string> tags = {
        "type:" + options_.destination_type,
        "topic:" + (destination.id.empty() ? options_.default_destination_id : destination.id),
        "direction:out", "manual_checkpoint:true"};
    // Without a consumed record the tracer starts a pathway here.
    if (!destination.context) destination.context = PathwayContext::Start(now_us);
    PathwayContext& context = *destination.context;
    // One checkpoint per record. From the second on they are alike (the loop detection brings
    // each back to the consumed hash, with a zero edge latency), so they are added together.
    for (int64_t round = 0; round < std::min<int64_t>(destination.pending, 2); ++round) {
      // The context travels in a header: its size counts in the payload, as the tracer counts.
      auto header_size = static_cast<double>(context.Encode().size() + kPathwayHeader.size());
      Add(SetCheckpoint(context, tags, node_, now_us), now_us, header_size,
          round == 0 ? 1.0 : static_cast<double>(destination.pending - 1));
    }
    destination.pending = 0;
  }
}

void DataStreams::Add(const Checkpoint& checkpoint, int64_t now_us, double payload_size,
                      double count) {
  int64_t now_ns = now_us * 1000;
  int64_t start_ns = now_ns - now_ns % kBucketNanos;
  auto bucket = std::find_if(buckets_.begin(), buckets_.end(),
                             [&](const Bucket& entry) { return entry.start_ns == start_ns; });
  if (bucket == buckets_.end()) bucket = buckets_.insert(buckets_.end(), {.start_ns = start_ns});
  std::string key;
  for (const std::string& tag : checkpoint.edge_tags) key += tag + '\n';
  key += std::to_string(checkpoint.hash) + ' ' + std::to_string(checkpoint.parent_hash);
  auto [slot, added] = bucket->index.try_emplace(std::move(key), bucket->stats.size());
  if (added) {
    if (bucket->stats.size() >= kMaxStatsPerBucket) {
      bucket->index.erase(slot);
      dropped_ += static_cast<int64_t>(count);
      return;
    }
    bucket->stats.push_back({.key = checkpoint});
  }
  Stats& stats = bucket->stats[slot->second];
  stats.pathway_latency.Add(checkpoint.pathway_latency_s, count);
  stats.edge_latency.Add(checkpoint.edge_latency_s, count);
  stats.payload_size.Add(payload_size, count);
}

void DataStreams::AppendBucket(MsgpackWriter& out, const Bucket& bucket) const {
  out.Map(4);
  out.String("Start");
  out.Unsigned(static_cast<uint64_t>(bucket.start_ns));
  out.String("Duration");
  out.Unsigned(static_cast<uint64_t>(kBucketNanos));
  out.String("Stats");
  out.Array(bucket.stats.size());
  for (const Stats& stats : bucket.stats) {
    out.Map(6);
    out.String("EdgeTags");
    out.Array(stats.key.edge_tags.size());
    for (const std::string& tag : stats.key.edge_tags) out.String(tag);
    out.String("Hash");
    out.Unsigned(stats.key.hash);
    out.String("ParentHash");
    out.Unsigned(stats.key.parent_hash);
    out.String("PathwayLatency");
    out.Binary(stats.pathway_latency.ToProto());
    out.String("EdgeLatency");
    out.Binary(stats.edge_latency.ToProto());
    out.String("PayloadSize");
    out.Binary(stats.payload_size.ToProto());
  }
  out.String("Backlogs");
  out.Array(0);
}

std::string DataStreams::TakePayload() {
  std::vector<Bucket> buckets;
  {
    std::lock_guard lock(mutex_);
    buckets.swap(buckets_);
  }
  if (buckets.empty()) return {};
  MsgpackWriter out;
  out.Map(5 + (options_.env.empty() ? 0 : 1) + (options_.version.empty() ? 0 : 1));
  out.String("Service");
  out.String(options_.service);
  out.String("TracerVersion");
  out.String(options_.tracer_version);
  out.String("Lang");
  out.String("cpp");
  out.String("Stats");
  out.Array(buckets.size());
  for (const Bucket& bucket : buckets) AppendBucket(out, bucket);
  out.String("Hostname");
  out.String(options_.hostname);
  if (!options_.env.empty()) {
    out.String("Env");
    out.String(options_.env);
  }
  if (!options_.version.empty()) {
    out.String("Version");
    out.String(options_.version);
  }
  return out.Take();
}

std::vector<DataStreams::Aggregate> DataStreams::Aggregated() const {
  std::lock_guard lock(mutex_);
  std::vector<Aggregate> out;
  for (const Bucket& bucket : buckets_) {
    for (const Stats& stats : bucket.stats) {
      out.push_back({.key = stats.key, .checkpoints = stats.pathway_latency.count()});
    }
  }
  return out;
}

int64_t DataStreams::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

}  // namespace bizon
