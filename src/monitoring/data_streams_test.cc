#include "monitoring/data_streams.h"

#include <gtest/gtest.h>

#include <string>

#include "monitoring/monitoring_test_support.h"

namespace bizon {
namespace {

// The expected values below were computed with ddtrace 4.6.0's data-streams processor
// (ddtrace/internal/datastreams/processor.py, its fnv1_64 and encoding.py) and its packb, from
// the same inputs: DD_SERVICE=bizon, no DD_ENV, the fixed times used here.

std::vector<std::string> ConsumeTags(const std::string& topic) {
  return {"type:kafka", "topic:" + topic, "direction:in", "manual_checkpoint:true"};
}

TEST(DataStreamsTest, Fnv1HashVectors) {
  EXPECT_EQ(Fnv1Hash64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1Hash64("a"), 0xaf63bd4c8601b7beULL);  // FNV-1a would give 0xaf63dc4c8601ec8c.
  EXPECT_EQ(Fnv1Hash64("foobar"), 0x340d8765a4dda9c2ULL);
}

TEST(DataStreamsTest, PathwayHashesChainAsTheTracersDo) {
  PathwayNode node;  // bizon, env "none".
  PathwayContext consume = PathwayContext::Start(1'700'000'000'000'000);
  Checkpoint in = SetCheckpoint(consume, ConsumeTags("orders"), node, 1'700'000'000'000'000);
  EXPECT_EQ(in.hash, 9418341408257692454ULL);
  EXPECT_EQ(in.parent_hash, 0U);
  EXPECT_EQ(in.edge_tags, (std::vector<std::string>{"direction:in", "manual_checkpoint:true",
                                                    "topic:orders", "type:kafka"}));
  Checkpoint out = SetCheckpoint(
      consume, {"type:bigquery", "topic:orders_table", "direction:out", "manual_checkpoint:true"},
      node, 1'700'000'000'000'000);
  EXPECT_EQ(out.parent_hash, in.hash);
  EXPECT_EQ(out.hash, 7235434441346607075ULL);

  PathwayContext upstream{.hash = 12345};
  Checkpoint prod =
      SetCheckpoint(upstream, ConsumeTags("orders"), {.service = "bizon", .env = "prod"}, 0);
  EXPECT_EQ(prod.hash, 3629516809249150682ULL);
  EXPECT_EQ(prod.parent_hash, 12345U);
}

TEST(DataStreamsTest, PathwayContextEncodesAsTheHeader) {
  PathwayContext context{.hash = 9418341408257692454ULL,
                         .pathway_start_us = 1'700'000'000'123'000,
                         .edge_start_us = 1'700'000'000'456'789};  // Milliseconds are sent.
  EXPECT_EQ(context.Encode(), "JlONPJyrtIL2oav++WKQp6v++WI=");
  auto decoded = PathwayContext::Decode("JlONPJyrtIL2oav++WKQp6v++WI=");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->hash, 9418341408257692454ULL);
  EXPECT_EQ(decoded->pathway_start_us, 1'700'000'000'123'000);
  EXPECT_EQ(decoded->edge_start_us, 1'700'000'000'456'000);
  EXPECT_EQ(decoded->Encode(), "JlONPJyrtIL2oav++WKQp6v++WI=");

  auto upstream = PathwayContext::Decode("OTAAAAAAAACAoKv++WK4t6v++WI=");
  ASSERT_TRUE(upstream);
  EXPECT_EQ(upstream->hash, 12345U);
  EXPECT_EQ(upstream->pathway_start_us, 1'700'000'000'000'000);
  EXPECT_EQ(upstream->edge_start_us, 1'700'000'001'500'000);
  // A negative time round-trips through the zigzag encoding.
  PathwayContext early{.hash = 1, .pathway_start_us = -5'000, .edge_start_us = 0};
  auto back = PathwayContext::Decode(early.Encode());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pathway_start_us, -5'000);

  for (std::string_view bad : {"", "abc", "!!!!", "AAAA", "OTAAAAAAAAA=", "OTAAAAAAAACAoKv++WK4"}) {
    EXPECT_FALSE(PathwayContext::Decode(bad)) << bad;
  }
}

TEST(DataStreamsTest, ReadsTopicAndPathwayFromKafkaShapedRecords) {
  RecordPathway kafka = ReadRecordPathway(
      R"({"topic":"cdc.users","offset":12,"partition":3,"timestamp":1700000000123,)"
      R"("keys":{"topic":"not this","x":["}",{"y":"\""}]},)"
      R"("headers":{"a":null,"dd-pathway-ctx-base64":"OTAAAAAAAACAoKv++WK4t6v++WI="},)"
      R"("value":{"broken)");  // Not scanned: both members were read before it.
  EXPECT_EQ(kafka.topic, "cdc.users");
  EXPECT_EQ(kafka.pathway, "OTAAAAAAAACAoKv++WK4t6v++WI=");

  RecordPathway escaped = ReadRecordPathway(R"( { "headers" : {} , "topic" : "a\u002fb" } )");
  EXPECT_EQ(escaped.topic, "a/b");
  EXPECT_FALSE(escaped.pathway);

  EXPECT_FALSE(ReadRecordPathway(R"({"id":1,"name":"x"})").topic);
  EXPECT_FALSE(ReadRecordPathway(R"({"topic":7})").topic);
  EXPECT_FALSE(
      ReadRecordPathway(R"({"topic":"t","headers":{"dd-pathway-ctx-base64":null}})").pathway);
  EXPECT_FALSE(ReadRecordPathway("[1,2]").topic);
  EXPECT_FALSE(ReadRecordPathway(R"({"a":"unterminated)").topic);
}

DataStreamsOptions VectorOptions() {
  return {.service = "bizon",
          .hostname = "host-1",
          .tracer_version = "0.1.0",
          .destination_type = "bigquery",
          .default_destination_id = "orders_table"};
}

// Two records consumed at 1700000002.0 s (one without headers, one whose producer upstream set
// a pathway), then the produce checkpoints of both at 1700000003.25 s; the payload is what
// ddtrace's processor serialises and packs for the same checkpoints.
TEST(DataStreamsTest, PayloadMatchesTheTracerByteForByte) {
  DataStreams streams(VectorOptions());
  RecordBatch records;
  records.Add("1", R"({"topic":"orders","offset":1,"headers":{},"value":{}})", 0);
  records.Add("2",
              R"({"topic":"orders","offset":2,"headers":{"dd-pathway-ctx-base64":)"
              R"("OTAAAAAAAACAoKv++WK4t6v++WI=","x-datadog-sampling-priority":"1"},"value":{}})",
              0);
  streams.Consume(records, 1'700'000'002'000'000);
  streams.Produce(1'700'000'003'250'000);
  std::vector<DataStreams::Aggregate> aggregated = streams.Aggregated();
  ASSERT_EQ(aggregated.size(), 3U);
  EXPECT_EQ(aggregated[0].key.hash, 9418341408257692454ULL);
  EXPECT_EQ(aggregated[1].key.hash, 10459890841170824729ULL);
  EXPECT_EQ(aggregated[1].key.parent_hash, 12345U);
  EXPECT_EQ(aggregated[2].key.hash, 15867248684731348454ULL);
  EXPECT_EQ(aggregated[2].key.parent_hash, 10459890841170824729ULL);
  EXPECT_EQ(aggregated[2].checkpoints, 2);
  std::string expected = FromHex(
      "85a753657276696365a562697a6f6ead54726163657256657273696f6ea5302e312e30a44c616e67a3637070"
      "a553746174739184a55374617274cf17979cfe362a0000a84475726174696f6ecf00000002540be400a55374"
      "6174739386a8456467655461677394ac646972656374696f6e3a696eb66d616e75616c5f636865636b706f69"
      "6e743a74727565ac746f7069633a6f7264657273aa747970653a6b61666b61a448617368cf82b4ab9c3c8d53"
      "26aa506172656e744861736800ae506174687761794c6174656e6379c4210a1209000000000040f03f110000"
      "000000ea944012001a0021000000000000f03fab456467654c6174656e6379c4210a1209000000000040f03f"
      "110000000000ea944012001a0021000000000000f03fab5061796c6f616453697a65c4210a12090000000000"
      "40f03f110000000000ea944012001a0021000000000000f03f86a8456467655461677394ac64697265637469"
      "6f6e3a696eb66d616e75616c5f636865636b706f696e743a74727565ac746f7069633a6f7264657273aa7479"
      "70653a6b61666b61a448617368cf9128ff4d19594e19aa506172656e7448617368cd3039ae50617468776179"
      "4c6174656e6379c4250a1209000000000040f03f110000000000ea9440120d1208000000000000f03f18ce15"
      "1a00ab456467654c6174656e6379c4250a1209000000000040f03f110000000000ea9440120d120800000000"
      "0000f03f189a141a00ab5061796c6f616453697a65c4210a1209000000000040f03f110000000000ea944012"
      "001a0021000000000000f03f86a8456467655461677394ad646972656374696f6e3a6f7574b66d616e75616c"
      "5f636865636b706f696e743a74727565b2746f7069633a6f72646572735f7461626c65ad747970653a626967"
      "7175657279a448617368cfdc33ca9c483235e6aa506172656e7448617368cf9128ff4d19594e19ae50617468"
      "7761794c6174656e6379c4250a1209000000000040f03f110000000000ea9440120d12080000000000000040"
      "188c161a00ab456467654c6174656e6379c42e0a1209000000000040f03f110000000000ea9440120d120800"
      "0000000000f03f1890151a0021000000000000f03fab5061796c6f616453697a65c4250a1209000000000040"
      "f03f110000000000ea9440120d1208000000000000004018ea181a00a84261636b6c6f677390a8486f73746e"
      "616d65a6686f73742d31");
  EXPECT_EQ(streams.TakePayload(), expected);
  EXPECT_EQ(streams.TakePayload(), "");  // Taken once.
  EXPECT_TRUE(streams.Aggregated().empty());
}

TEST(DataStreamsTest, ProduceFollowsEachDestinationsLastConsumedRecord) {
  DataStreamsOptions options = VectorOptions();
  options.env = "prod";
  options.version = "1.2";
  DataStreams streams(options);
  RecordBatch records;
  records.Add("1", R"({"topic":"a","headers":{}})", 0, "table_a");
  records.Add("2", R"({"topic":"b","headers":{}})", 0, "table_b");
  records.Add("3", R"({"topic":"a","headers":{}})", 0, "table_a");
  records.Add("4", R"({"id":4})", 0, "table_c");  // Not Kafka-shaped: produced only.
  streams.Consume(records, 1'000'000);
  streams.Produce(2'000'000);
  streams.Produce(3'000'000);  // Nothing consumed since: nothing produced.
  PathwayNode node{.env = "prod"};
  PathwayContext a = PathwayContext::Start(0);
  uint64_t consumed_a = SetCheckpoint(a, ConsumeTags("a"), node, 0).hash;
  PathwayContext b = PathwayContext::Start(0);
  uint64_t consumed_b = SetCheckpoint(b, ConsumeTags("b"), node, 0).hash;
  std::vector<DataStreams::Aggregate> aggregated = streams.Aggregated();
  ASSERT_EQ(aggregated.size(), 5U);
  EXPECT_EQ(aggregated[0].key.hash, consumed_a);
  EXPECT_EQ(aggregated[0].checkpoints, 2);  // Same topic, same (new) pathway: one key.
  EXPECT_EQ(aggregated[1].key.hash, consumed_b);
  auto produced = [&](size_t index, const std::string& table, uint64_t parent) {
    EXPECT_EQ(aggregated[index].key.edge_tags,
              (std::vector<std::string>{"direction:out", "manual_checkpoint:true", "topic:" + table,
                                        "type:bigquery"}));
    EXPECT_EQ(aggregated[index].key.parent_hash, parent);
  };
  produced(2, "table_a", consumed_a);
  EXPECT_EQ(aggregated[2].checkpoints, 2);
  produced(3, "table_b", consumed_b);
  EXPECT_EQ(aggregated[3].checkpoints, 1);
  produced(4, "table_c", 0);
  std::string payload = streams.TakePayload();
  EXPECT_NE(payload.find("\xa3"
                         "Env\xa4prod"),
            std::string::npos);
  EXPECT_NE(payload.find("\xa7Version\xa3"
                         "1.2"),
            std::string::npos);
}

TEST(DataStreamsTest, RecordsWithoutDestinationIdProduceToTheDefaultOne) {
  DataStreams streams(VectorOptions());
  RecordBatch records;
  for (int i = 0; i < 5; ++i) records.Add("r", R"({"topic":"orders","headers":{}})", 0);
  streams.Consume(records, 1'000'000);
  streams.Produce(1'500'000);
  std::vector<DataStreams::Aggregate> aggregated = streams.Aggregated();
  ASSERT_EQ(aggregated.size(), 2U);
  EXPECT_EQ(aggregated[0].checkpoints, 5);
  EXPECT_EQ(aggregated[1].key.edge_tags[2], "topic:orders_table");
  EXPECT_EQ(aggregated[1].checkpoints, 5);
  EXPECT_DOUBLE_EQ(aggregated[1].key.edge_latency_s, 0.5);  // The key is the first checkpoint.
}

TEST(DataStreamsTest, CheckpointsAreBucketedByTenSeconds) {
  DataStreams streams(VectorOptions());
  RecordBatch records;
  records.Add("r", R"({"topic":"orders"})", 0);
  streams.Consume(records, 19'999'999);
  streams.Consume(records, 20'000'000);
  EXPECT_EQ(streams.Aggregated().size(), 2U);  // Same key, two buckets.
  std::string payload = streams.TakePayload();
  EXPECT_NE(payload.find("\x92\x84\xa5Start\xcf"), std::string::npos);  // Two buckets.
}

TEST(DataStreamsTest, TooManyPathwaysInABucketAreDroppedAndCounted) {
  DataStreams streams(VectorOptions());
  RecordBatch records;
  for (size_t i = 0; i <= DataStreams::kMaxStatsPerBucket; ++i) {
    records.Add("r", R"({"topic":"t)" + std::to_string(i) + R"("})", 0);
  }
  streams.Consume(records, 1'000'000);
  EXPECT_EQ(streams.Aggregated().size(), DataStreams::kMaxStatsPerBucket);
  EXPECT_EQ(streams.dropped(), 1);
}

}  // namespace
}  // namespace bizon
