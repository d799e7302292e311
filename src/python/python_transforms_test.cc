#include "python/python_transforms.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/yaml_loader.h"

namespace bizon {
namespace {

// The `transforms` list of a YAML snippet, as the config loader gives it (with line marks).
Value Transforms(std::string_view yaml) {
  auto parsed = ParseYaml(yaml, "test.yml");
  EXPECT_TRUE(parsed.has_value()) << parsed.error().message();
  return *parsed->Find("transforms");
}

std::unique_ptr<TransformChain> Chain(std::string_view yaml, TransformOptions options = {}) {
  auto chain = TransformChain::Compile(Transforms(yaml), options);
  EXPECT_TRUE(chain.has_value()) << chain.error().message();
  return std::move(*chain);
}

RecordBatch Batch(const std::vector<std::string>& payloads) {
  RecordBatch batch;
  for (size_t i = 0; i < payloads.size(); ++i) {
    batch.Add("id-" + std::to_string(i), payloads[i], 1000 + static_cast<int64_t>(i),
              i % 2 == 0 ? "" : "route");
  }
  batch.SetExtractedAt(42);
  return batch;
}

std::vector<std::string> Payloads(const RecordBatch& batch) {
  std::vector<std::string> payloads;
  for (size_t i = 0; i < batch.size(); ++i) payloads.emplace_back(batch.payload(i));
  return payloads;
}

TEST(PythonTransformsTest, MutatesDataInPlaceAndKeepsRecordFields) {
  auto chain = Chain(R"(
transforms:
  - label: upper
    python: |
      data['name'] = data['name'].upper()
)");
  RecordBatch batch = Batch({R"({"id":1,"name":"bizon"})", R"({"name": "elan", "id": 2})"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(Payloads(batch), (std::vector<std::string>{R"({"id": 1, "name": "BIZON"})",
                                                       R"({"name": "ELAN", "id": 2})"}));
  EXPECT_EQ(batch.id(0), "id-0");
  EXPECT_EQ(batch.id(1), "id-1");
  EXPECT_EQ(batch.timestamp_us(1), 1001);
  EXPECT_EQ(batch.destination_id(0), "");
  EXPECT_EQ(batch.destination_id(1), "route");
  EXPECT_EQ(batch.extracted_at_us(0), 42);
  EXPECT_EQ(batch.extracted_at_us(1), 42);
}

TEST(PythonTransformsTest, RebindsData) {
  auto chain = Chain(R"(
transforms:
  - label: unwrap
    python: |
      if data['value']['op'] == 'd':
          data = data['value']['before']
      else:
          data = data['value']['after']
)");
  RecordBatch batch = Batch({R"({"value": {"op": "d", "before": {"id": 7}, "after": null}})",
                             R"({"value": {"op": "c", "before": null, "after": {"id": 8}}})"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(Payloads(batch), (std::vector<std::string>{R"({"id": 7})", R"({"id": 8})"}));
}

TEST(PythonTransformsTest, RunsSeveralTransformsInOrderThroughJson) {
  auto chain = Chain(R"(
transforms:
  - label: first
    python: |
      data['steps'] = ['first']
      data[1] = (1, 2)
  - label: second
    python: |
      data['steps'].append('second')
      # The previous result went through JSON: the tuple is a list, the int key a string.
      data['seen'] = [type(data['1']).__name__, 1 in data]
)");
  RecordBatch batch = Batch({"{}"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0),
            R"({"steps": ["first", "second"], "1": [1, 2], "seen": ["list", false]})");
  EXPECT_EQ(chain->size(), 2u);
}

TEST(PythonTransformsTest, NoneBecomesNull) {
  auto chain = Chain(R"(
transforms:
  - label: drop
    python: data = None
)");
  RecordBatch batch = Batch({R"({"a": 1})", R"({"b": 2})"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(Payloads(batch), (std::vector<std::string>{"null", "null"}));
  EXPECT_EQ(batch.size(), 2u);
}

TEST(PythonTransformsTest, EscapesLikePythonJsonDumpsDefaults) {
  auto chain = Chain(R"(
transforms:
  - label: pass-through
    python: pass
)");
  // json.dumps({"name": "élan 北极熊 😀", "q": "\"quote\" \\ /\n", "n": 1.5e20, "t": True,
  //             "z": None, "f": 0.1}) in Python 3.11:
  RecordBatch batch = Batch({R"({"name":"élan 北极熊 😀","q":"\"quote\" \\ \/\n","n":1.5e20,)"
                             R"("t":true,"z":null,"f":0.1,"e":[],"o":{}})"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0),
            R"({"name": "\u00e9lan \u5317\u6781\u718a \ud83d\ude00", "q": "\"quote\" \\ /\n", )"
            R"("n": 1.5e+20, "t": true, "z": null, "f": 0.1, "e": [], "o": {}})");
}

TEST(PythonTransformsTest, WritesTheBytesOfJsonDumpsForRandomValues) {
  // One chain builds a random value per record and lets bizon write it; the other writes
  // json.dumps of the same value as a JSON string: decoding that string gives the expected bytes.
  // Top-level names are invisible inside functions (empty globals): defaults carry them.
  constexpr const char* kBuild = R"(
import random
rng = random.Random(data['seed'])
alphabet = ['a', 'Z', ' ', '"', '\\', '/', '\n', '\t', '\x00', '\x1f', '\x7f', '\x80', 'é', 'ÿ',
            '\u2028', '北', '\ud800', '😀', '\U0010ffff']
def text(rng=rng, alphabet=alphabet):
    return ''.join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
def scalar(rng=rng, text=text):
    kind = rng.randint(0, 8)
    if kind == 0: return None
    if kind == 1: return rng.random() < 0.5
    if kind == 2: return rng.randint(-2**70, 2**70)
    if kind == 3: return rng.randint(-1000, 1000)
    if kind == 4: return rng.choice([0.1, -0.0, 1e22, 1.5e-7, 123456.789, float('inf'), float('nan'), 2.0**60])
    if kind == 5: return rng.uniform(-1e6, 1e6)
    return text()
def build(level, me, rng=rng, scalar=scalar, text=text):
    if level > 3 or rng.random() < 0.3: return scalar()
    if rng.random() < 0.5:
        return [me(level + 1, me) for _ in range(rng.randint(0, 4))] + ([(1, 'x')] if rng.random() < 0.2 else [])
    keys = [text(), rng.randint(-5, 5), 1.5, True, False, None]
    return {rng.choice(keys): me(level + 1, me) for _ in range(rng.randint(0, 4))}
value = build(0, build)
)";
  auto make = [&](const std::string& tail) {
    return TransformChain::Compile(Value(Value::List{Value(
        Value::Map{{"label", Value("random")}, {"python", Value(std::string(kBuild) + tail)}})}));
  };
  auto written = make("data = value\n");
  auto expected = make("import json\ndata = json.dumps(value)\n");
  ASSERT_TRUE(written.has_value()) << written.error().message();
  ASSERT_TRUE(expected.has_value()) << expected.error().message();
  std::vector<std::string> seeds;
  for (int seed = 0; seed < 2000; ++seed) seeds.push_back(fmt::format("{{\"seed\": {}}}", seed));
  RecordBatch ours = Batch(seeds);
  RecordBatch theirs = Batch(seeds);
  Status status = (*written)->Apply(ours);
  ASSERT_TRUE(status.ok()) << status.message();
  status = (*expected)->Apply(theirs);
  ASSERT_TRUE(status.ok()) << status.message();
  for (size_t i = 0; i < ours.size(); ++i) {
    auto reference = Value::FromJson(theirs.payload(i));
    ASSERT_TRUE(reference.has_value()) << theirs.payload(i);
    ASSERT_EQ(ours.payload(i), reference->AsString()) << "seed " << i;
  }
}

TEST(PythonTransformsTest, RemovesCommonIndentation) {
  Value transforms(Value::List{
      Value(Value::Map{{"label", Value("indented")},
                       {"python", Value("    x = 1\n    if x:\n        data['x'] = x\n")}})});
  auto chain = TransformChain::Compile(transforms);
  ASSERT_TRUE(chain.has_value()) << chain.error().message();
  RecordBatch batch = Batch({"{}"});
  ASSERT_TRUE((*chain)->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0), R"({"x": 1})");
}

TEST(PythonTransformsTest, RunsWithEmptyGlobalsLikeTheOriginal) {
  // Imports work; top-level names are locals, invisible inside functions of the same snippet.
  auto chain = Chain(R"(
transforms:
  - label: scoping
    python: |
      import math
      data['floor'] = math.floor(2.7)
      limit = 3
      def over():
          return limit
      try:
          over()
          data['visible'] = True
      except NameError:
          data['visible'] = False
)");
  RecordBatch batch = Batch({"{}"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0), R"({"floor": 2, "visible": false})");
}

TEST(PythonTransformsTest, RaisingTransformNamesLabelRecordAndTraceback) {
  auto chain = Chain(R"(
transforms:
  - label: fine
    python: data['ok'] = True
  - label: divide
    python: |
      ratio = data['a'] / data['b']
      data['ratio'] = ratio
)");
  RecordBatch batch = Batch({R"({"a": 1, "b": 2})", R"({"a": 1, "b": 0})"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.failure_class(), FailureClass::kTransform);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  const std::string& message = status.message();
  EXPECT_NE(message.find("Error applying transformation 'divide' to record 'id-1'"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("ZeroDivisionError: division by zero"), std::string::npos) << message;
  EXPECT_NE(message.find("Traceback (most recent call last):"), std::string::npos) << message;
  EXPECT_NE(message.find("File \"<transform divide>\", line 1"), std::string::npos) << message;
  EXPECT_NE(message.find("ratio = data['a'] / data['b']"), std::string::npos) << message;
  // A failed batch is left as it was.
  EXPECT_EQ(batch.payload(0), R"({"a": 1, "b": 2})");
}

TEST(PythonTransformsTest, ResultThatJsonRejectsIsAnError) {
  auto chain = Chain(R"(
transforms:
  - label: set
    python: data = {1, 2}
)");
  RecordBatch batch = Batch({"{}"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("Error applying transformation 'set' to record 'id-0' "
                                  "(serialising its result to JSON)"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("Object of type set is not JSON serializable"), std::string::npos)
      << status.message();
}

TEST(PythonTransformsTest, PayloadThatIsNotJsonIsAnError) {
  auto chain = Chain(R"(
transforms:
  - label: any
    python: pass
)");
  RecordBatch batch = Batch({"{not json"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("the payload of record 'id-0' is not valid JSON text"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("JSONDecodeError"), std::string::npos) << status.message();
}

TEST(PythonTransformsTest, ParsesLikeJsonLoads) {
  auto chain = Chain(R"(
transforms:
  - label: any
    python: pass
)");
  RecordBatch batch = Batch(
      {" \t{\"a\": [1, 2.50, 1e400, 123456789012345678901234567890]}\r\n", "\"text\"", "NaN"});
  ASSERT_TRUE(chain->Apply(batch).ok());
  EXPECT_EQ(Payloads(batch), (std::vector<std::string>{
                                 R"({"a": [1, 2.5, Infinity, 123456789012345678901234567890]})",
                                 R"("text")", "NaN"}));
  RecordBatch extra = Batch({R"({"a": 1} x)"});
  Status status = chain->Apply(extra);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("JSONDecodeError: Extra data: line 1 column 10 (char 9)"),
            std::string::npos)
      << status.message();
}

TEST(PythonTransformsTest, CircularResultIsAnErrorAndLeavesNoTrace) {
  auto chain = Chain(R"(
transforms:
  - label: loop
    python: |
      if data.get('loop'):
          data['self'] = data
)");
  RecordBatch batch = Batch({R"({"loop": true})"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("ValueError: Circular reference detected"), std::string::npos)
      << status.message();
  RecordBatch next = Batch({R"({"loop": false, "nested": {"x": [1]}})"});
  ASSERT_TRUE(chain->Apply(next).ok());
  EXPECT_EQ(next.payload(0), R"({"loop": false, "nested": {"x": [1]}})");
}

TEST(PythonTransformsTest, DeletingDataIsAnError) {
  auto chain = Chain(R"(
transforms:
  - label: delete
    python: del data
)");
  RecordBatch batch = Batch({"{}"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("the transform deleted `data`"), std::string::npos)
      << status.message();
}

TEST(PythonTransformsTest, LoopingTransformTimesOutPerRecord) {
  auto chain = Chain(R"(
transforms:
  - label: forever
    python: |
      while data['spin']:
          pass
)",
                     {.record_timeout = std::chrono::milliseconds(300)});
  RecordBatch batch = Batch({R"({"spin": false})", R"({"spin": true})"});
  Status status = chain->Apply(batch);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("Error applying transformation 'forever' to record 'id-1': "
                                  "no result after 0.3 s"),
            std::string::npos)
      << status.message();
  // The interpreter is usable afterwards: nothing is left pending.
  RecordBatch next = Batch({R"({"spin": false})"});
  EXPECT_TRUE(chain->Apply(next).ok());
}

TEST(PythonTransformsTest, KeepsExtractionTimePerRecord) {
  auto chain = Chain(R"(
transforms:
  - label: touch
    python: data['t'] = 1
)");
  RecordBatch first = Batch({"{}", "{}"});
  RecordBatch second = Batch({"{}"});
  second.SetExtractedAt(99);
  RecordBatch merged;
  merged.AppendRange(first, 0, first.size());
  merged.AppendRange(second, 0, second.size());
  ASSERT_TRUE(chain->Apply(merged).ok());
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged.extracted_at_us(0), 42);
  EXPECT_EQ(merged.extracted_at_us(1), 42);
  EXPECT_EQ(merged.extracted_at_us(2), 99);
  EXPECT_EQ(merged.destination_id(1), "route");
  EXPECT_EQ(merged.payload(2), R"({"t": 1})");
}

TEST(PythonTransformsTest, EmptyChainAndEmptyBatchAreNoOps) {
  auto chain = TransformChain::Compile(Value::EmptyList());
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ((*chain)->size(), 0u);
  RecordBatch batch = Batch({R"({"a":1})"});
  ASSERT_TRUE((*chain)->Apply(batch).ok());
  EXPECT_EQ(batch.payload(0), R"({"a":1})");

  auto real = Chain("transforms:\n  - label: x\n    python: data['x'] = 1\n");
  RecordBatch empty;
  EXPECT_TRUE(real->Apply(empty).ok());
  EXPECT_TRUE(empty.empty());
}

TEST(PythonTransformsTest, CompileReportsSyntaxErrors) {
  auto chain = TransformChain::Compile(Transforms(R"(
transforms:
  - label: broken
    python: |
      x = 1
      y = (
)"));
  ASSERT_FALSE(chain.has_value());
  EXPECT_EQ(chain.error().failure_class(), FailureClass::kConfig);
  EXPECT_NE(chain.error().message().find("syntax error in transform 'broken' at line 2"),
            std::string::npos)
      << chain.error().message();
}

TEST(PythonTransformsTest, CompileWithFileNameNamesFileLineAndLabelOfEveryError) {
  std::filesystem::path file = std::filesystem::temp_directory_path() /
                               ("bizon_transforms_" + std::to_string(::getpid()) + ".yml");
  std::string yaml = R"(name: demo
transforms:
  - label: good
    python: data['a'] = 1
  - label: debezium
    python: |
      cluster = data['value']['source']['name']
      if cluster
          data = None
  - label: inline
    python: "data = ]"
)";
  std::ofstream(file) << yaml;
  auto parsed = ParseYaml(yaml, file.string());
  ASSERT_TRUE(parsed.has_value());
  auto chain = TransformChain::Compile(*parsed->Find("transforms"), {.file_name = file.string()});
  std::filesystem::remove(file);
  ASSERT_FALSE(chain.has_value());
  const Status& status = chain.error();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.failure_class(), FailureClass::kConfig);
  EXPECT_NE(status.message().find(file.string() + ":8: transforms[1].python: syntax error in "
                                                  "transform 'debezium' at line 2 of its code: "
                                                  "expected ':': if cluster"),
            std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(file.string() + ":11: transforms[2].python: syntax error in "
                                                  "transform 'inline' at line 1"),
            std::string::npos)
      << status.message();

  auto fine = ParseYaml("transforms:\n  - label: ok\n    python: data = 1\n", "ok.yml");
  auto compiled = TransformChain::Compile(*fine->Find("transforms"), {.file_name = "ok.yml"});
  ASSERT_TRUE(compiled.has_value()) << compiled.error().message();
  EXPECT_EQ((*compiled)->size(), 1u);
}

}  // namespace
}  // namespace bizon
