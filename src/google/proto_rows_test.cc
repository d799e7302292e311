#include "google/proto_rows.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bizon {
namespace {

namespace pb = google::protobuf;

BigQueryField Column(std::string name, std::string type, std::string mode = "",
                     std::vector<BigQueryField> fields = {}) {
  BigQueryField field;
  field.name = std::move(name);
  field.type = std::move(type);
  field.mode = std::move(mode);
  field.fields = std::move(fields);
  return field;
}

// The row message built back from the descriptor bytes, as the server would build it.
class RowReader {
 public:
  explicit RowReader(const ProtoRowSchema& schema) {
    pb::FileDescriptorProto file;
    file.set_name("table_row.proto");
    EXPECT_TRUE(file.add_message_type()->ParseFromString(schema.descriptor()));
    const pb::FileDescriptor* built = pool_.BuildFile(file);
    EXPECT_NE(built, nullptr);
    descriptor_ = built->FindMessageTypeByName("TableRow");
  }

  std::unique_ptr<pb::Message> Parse(const std::string& bytes) {
    std::unique_ptr<pb::Message> message(factory_.GetPrototype(descriptor_)->New());
    EXPECT_TRUE(message->ParseFromString(bytes)) << message->InitializationErrorString();
    return message;
  }

  const pb::Descriptor* descriptor() const { return descriptor_; }

 private:
  pb::DescriptorPool pool_;
  pb::DynamicMessageFactory factory_{&pool_};
  const pb::Descriptor* descriptor_ = nullptr;
};

std::string Encode(const ProtoRowSchema& schema, std::string_view json) {
  ProtoRowEncoder encoder(schema);
  std::string out;
  Status status = encoder.Encode(json, out);
  EXPECT_TRUE(status.ok()) << status.ToString() << " for " << json;
  return out;
}

Status EncodeError(const ProtoRowSchema& schema, std::string_view json) {
  ProtoRowEncoder encoder(schema);
  std::string out = "kept";
  Status status = encoder.Encode(json, out);
  EXPECT_EQ(out, "kept");
  return status;
}

TEST(ProtoRowSchemaTest, DescriptorFollowsTheTableSchema) {
  auto schema = ProtoRowSchema::Make({
      Column("id", "INTEGER", "REQUIRED"),
      Column("tags", "STRING", "REPEATED"),
      Column("amount", "FLOAT"),
      Column("when", "TIMESTAMP"),
      Column("day", "DATE"),
      Column("blob", "BYTES"),
      Column("ok", "bool"),
      Column("address", "RECORD", "NULLABLE",
             {Column("city", "STRING"), Column("zip", "INT64", "REQUIRED")}),
      Column("Record_8", "STRING"),
  });
  ASSERT_TRUE(schema.has_value()) << schema.error().ToString();
  pb::DescriptorProto message;
  ASSERT_TRUE(message.ParseFromString(schema->descriptor()));
  EXPECT_EQ(message.name(), "TableRow");
  ASSERT_EQ(message.field_size(), 9);
  EXPECT_EQ(message.field(0).number(), 1);
  EXPECT_EQ(message.field(0).label(), pb::FieldDescriptorProto::LABEL_REQUIRED);
  EXPECT_EQ(message.field(0).type(), pb::FieldDescriptorProto::TYPE_INT64);
  EXPECT_EQ(message.field(1).label(), pb::FieldDescriptorProto::LABEL_REPEATED);
  EXPECT_EQ(message.field(1).type(), pb::FieldDescriptorProto::TYPE_STRING);
  EXPECT_EQ(message.field(2).type(), pb::FieldDescriptorProto::TYPE_DOUBLE);
  EXPECT_EQ(message.field(2).label(), pb::FieldDescriptorProto::LABEL_OPTIONAL);
  EXPECT_EQ(message.field(3).type(), pb::FieldDescriptorProto::TYPE_INT64);
  EXPECT_EQ(message.field(4).type(), pb::FieldDescriptorProto::TYPE_INT32);
  EXPECT_EQ(message.field(5).type(), pb::FieldDescriptorProto::TYPE_BYTES);
  EXPECT_EQ(message.field(6).type(), pb::FieldDescriptorProto::TYPE_BOOL);
  EXPECT_EQ(message.field(7).type(), pb::FieldDescriptorProto::TYPE_MESSAGE);
  ASSERT_EQ(message.nested_type_size(), 1);
  EXPECT_EQ(message.field(7).type_name(), message.nested_type(0).name());
  EXPECT_EQ(message.nested_type(0).field(1).label(), pb::FieldDescriptorProto::LABEL_REQUIRED);
  // The nested type's name avoids the column that would clash with it.
  EXPECT_NE(message.nested_type(0).name(), "Record_8");
  RowReader reader(*schema);  // libprotobuf accepts it as a message.
  EXPECT_NE(reader.descriptor(), nullptr);
}

TEST(ProtoRowSchemaTest, StorageApiTypeNamesAreAccepted) {
  // TableFieldSchema.Type's names, as GetWriteStream reports the table schema.
  for (const char* type :
       {"STRING", "INT64", "DOUBLE", "STRUCT", "BYTES", "BOOL", "TIMESTAMP", "DATE", "TIME",
        "DATETIME", "GEOGRAPHY", "NUMERIC", "BIGNUMERIC", "INTERVAL", "JSON"}) {
    std::vector<BigQueryField> sub;
    if (std::string(type) == "STRUCT") sub = {Column("x", "INT64")};
    EXPECT_TRUE(ProtoRowSchema::Make({Column("c", type, "NULLABLE", sub)}).has_value()) << type;
    EXPECT_TRUE(IsProtoRowType(type)) << type;
  }
}

TEST(ProtoRowSchemaTest, RefusesWhatItCannotEncode) {
  auto range = ProtoRowSchema::Make({Column("r", "RANGE")});
  ASSERT_FALSE(range.has_value());
  EXPECT_EQ(range.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(range.error().failure_class(), FailureClass::kDestination);
  EXPECT_NE(range.error().message().find("'RANGE'"), std::string::npos);
  auto name = ProtoRowSchema::Make({Column("first name", "STRING")});
  ASSERT_FALSE(name.has_value());
  EXPECT_NE(name.error().message().find("'first name'"), std::string::npos);
  EXPECT_FALSE(ProtoRowSchema::Make({Column("r", "RECORD")}).has_value());
  EXPECT_FALSE(ProtoRowSchema::Make({Column("m", "STRING", "OPTIONALISH")}).has_value());
  EXPECT_FALSE(ProtoRowSchema::Make({}).has_value());
}

// One value per case: the column's type, the JSON value, and a check of the parsed field.
struct ScalarCase {
  std::string type;
  std::string json;
  std::function<void(const pb::Message&, const pb::Reflection&, const pb::FieldDescriptor*)> check;
};

TEST(ProtoRowEncoderTest, EachTypeReadsBackFieldByField) {
  auto int64 = [](int64_t want) {
    return [want](const pb::Message& m, const pb::Reflection& r, const pb::FieldDescriptor* f) {
      EXPECT_EQ(r.GetInt64(m, f), want);
    };
  };
  auto int32 = [](int32_t want) {
    return [want](const pb::Message& m, const pb::Reflection& r, const pb::FieldDescriptor* f) {
      EXPECT_EQ(r.GetInt32(m, f), want);
    };
  };
  auto real = [](double want) {
    return [want](const pb::Message& m, const pb::Reflection& r, const pb::FieldDescriptor* f) {
      double got = r.GetDouble(m, f);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_EQ(got, want);
      }
    };
  };
  auto text = [](std::string want) {
    return [want](const pb::Message& m, const pb::Reflection& r, const pb::FieldDescriptor* f) {
      EXPECT_EQ(r.GetString(m, f), want);
    };
  };
  auto flag = [](bool want) {
    return [want](const pb::Message& m, const pb::Reflection& r, const pb::FieldDescriptor* f) {
      EXPECT_EQ(r.GetBool(m, f), want);
    };
  };
  const std::vector<ScalarCase> cases = {
      {"INT64", "42", int64(42)},
      {"INTEGER", "-9223372036854775808", int64(INT64_MIN)},
      {"INT64", "\"9223372036854775807\"", int64(INT64_MAX)},
      {"INT64", "1e3", int64(1000)},
      {"INT64", "-7.0", int64(-7)},
      {"FLOAT64", "1.5", real(1.5)},
      {"FLOAT", "-2e-3", real(-0.002)},
      {"DOUBLE", "\"3.25\"", real(3.25)},
      {"FLOAT64", "\"NaN\"", real(NAN)},
      {"FLOAT64", "\"Infinity\"", real(INFINITY)},
      {"FLOAT64", "\"-Infinity\"", real(-INFINITY)},
      {"FLOAT64", "7", real(7)},
      {"BOOL", "true", flag(true)},
      {"BOOLEAN", "false", flag(false)},
      {"STRING", "\"h\\u00e9llo \\\"q\\\"\\n\"", text("h\xc3\xa9llo \"q\"\n")},
      {"STRING", "{ \"a\" : [1, 2] , \"b\": {} }", text(R"({"a":[1,2],"b":{}})")},
      {"STRING", "[ \"x\" ]", text(R"(["x"])")},
      {"GEOGRAPHY", "\"POINT(1 2)\"", text("POINT(1 2)")},
      {"JSON", "{\"k\": [true, null]}", text(R"({"k":[true,null]})")},
      {"JSON", "\"{\\\"k\\\":1}\"", text(R"({"k":1})")},
      {"JSON", "12.50", text("12.50")},
      {"JSON", "true", text("true")},
      {"BYTES", "\"AAEC/w==\"", text(std::string("\x00\x01\x02\xff", 4))},
      {"BYTES", "\"_-8\"", text("\xff\xef")},
      {"NUMERIC", "\"123.456\"", text("123.456")},
      {"BIGNUMERIC", "-1.5e10", text("-1.5e10")},
      {"NUMERIC", "99", text("99")},
      {"DATETIME", "\"2024-01-02 03:04:05.123456\"", text("2024-01-02 03:04:05.123456")},
      {"TIME", "\"23:59:59\"", text("23:59:59")},
      {"INTERVAL", "\"1-2 3 4:5:6\"", text("1-2 3 4:5:6")},
      {"TIMESTAMP", "\"2024-01-02T03:04:05Z\"", int64(1704164645000000)},
      {"TIMESTAMP", "\"2024-01-02 03:04:05.123456\"", int64(1704164645123456)},
      {"TIMESTAMP", "\"2024-01-02T03:04:05.1234569+00:00\"", int64(1704164645123456)},
      {"TIMESTAMP", "\"2024-01-02T05:04:05+02:00\"", int64(1704164645000000)},
      {"TIMESTAMP", "\"2024-01-01T22:04:05-0500\"", int64(1704164645000000)},
      {"TIMESTAMP", "\"2024-01-02 03:04:05 UTC\"", int64(1704164645000000)},
      {"TIMESTAMP", "\"2024-1-2\"", int64(1704153600000000)},
      {"TIMESTAMP", "\"1969-12-31T23:59:59.5Z\"", int64(-500000)},
      {"TIMESTAMP", "\"0001-01-01T00:00:00Z\"", int64(-62135596800000000)},
      {"TIMESTAMP", "1704164645", int64(1704164645000000)},
      {"TIMESTAMP", "1704164645.25", int64(1704164645250000)},
      {"DATE", "\"2024-02-29\"", int32(19782)},
      {"DATE", "\"1970-01-01\"", int32(0)},
      {"DATE", "\"1969-12-31\"", int32(-1)},
      {"DATE", "\"0001-01-01\"", int32(-719162)},
      {"DATE", "\"9999-12-31\"", int32(2932896)},
      {"DATE", "19782", int32(19782)},
  };
  for (const ScalarCase& test : cases) {
    SCOPED_TRACE(test.type + " " + test.json);
    auto schema = ProtoRowSchema::Make({Column("v", test.type), Column("other", "STRING")});
    ASSERT_TRUE(schema.has_value()) << schema.error().ToString();
    RowReader reader(*schema);
    std::string bytes = Encode(*schema, "{\"other\": \"x\", \"v\": " + test.json + "}");
    auto message = reader.Parse(bytes);
    const pb::Reflection& reflection = *message->GetReflection();
    const pb::FieldDescriptor* field = reader.descriptor()->FindFieldByName("v");
    ASSERT_TRUE(reflection.HasField(*message, field));
    test.check(*message, reflection, field);
    EXPECT_EQ(reflection.GetString(*message, reader.descriptor()->FindFieldByName("other")), "x");
  }
}

TEST(ProtoRowEncoderTest, NullAndAbsentLeaveFieldsUnset) {
  auto schema = ProtoRowSchema::Make(
      {Column("a", "INT64"), Column("b", "STRING"), Column("c", "STRING", "REPEATED")});
  ASSERT_TRUE(schema.has_value());
  RowReader reader(*schema);
  auto message = reader.Parse(Encode(*schema, R"({"a": null, "c": null})"));
  const pb::Reflection& reflection = *message->GetReflection();
  EXPECT_FALSE(reflection.HasField(*message, reader.descriptor()->FindFieldByName("a")));
  EXPECT_FALSE(reflection.HasField(*message, reader.descriptor()->FindFieldByName("b")));
  EXPECT_EQ(reflection.FieldSize(*message, reader.descriptor()->FindFieldByName("c")), 0);
  EXPECT_EQ(Encode(*schema, "{}"), "");
}

TEST(ProtoRowEncoderTest, RecordsAndRepeatedFieldsNest) {
  auto schema = ProtoRowSchema::Make({
      Column("id", "INT64", "REQUIRED"),
      Column("scores", "FLOAT64", "REPEATED"),
      Column("days", "DATE", "REPEATED"),
      Column("owner", "RECORD", "",
             {Column("name", "STRING", "REQUIRED"),
              Column("phones", "RECORD", "REPEATED",
                     {Column("kind", "STRING"), Column("number", "STRING")})}),
      Column("items", "STRUCT", "REPEATED", {Column("sku", "STRING"), Column("qty", "INT64")}),
  });
  ASSERT_TRUE(schema.has_value()) << schema.error().ToString();
  RowReader reader(*schema);
  auto message = reader.Parse(Encode(*schema, R"({
    "id": 7, "scores": [1.5, "2"], "days": ["2024-01-01", 1],
    "owner": {"name": "Ann", "phones": [{"kind": "home", "number": "1"}, {"number": "2"}]},
    "items": [{"sku": "a", "qty": "3"}, {"sku": "b"}]
  })"));
  const pb::Descriptor* d = reader.descriptor();
  const pb::Reflection& r = *message->GetReflection();
  EXPECT_EQ(r.GetInt64(*message, d->FindFieldByName("id")), 7);
  ASSERT_EQ(r.FieldSize(*message, d->FindFieldByName("scores")), 2);
  EXPECT_EQ(r.GetRepeatedDouble(*message, d->FindFieldByName("scores"), 1), 2.0);
  ASSERT_EQ(r.FieldSize(*message, d->FindFieldByName("days")), 2);
  EXPECT_EQ(r.GetRepeatedInt32(*message, d->FindFieldByName("days"), 0), 19723);
  EXPECT_EQ(r.GetRepeatedInt32(*message, d->FindFieldByName("days"), 1), 1);
  const pb::Message& owner = r.GetMessage(*message, d->FindFieldByName("owner"));
  const pb::Reflection& owner_r = *owner.GetReflection();
  EXPECT_EQ(owner_r.GetString(owner, owner.GetDescriptor()->FindFieldByName("name")), "Ann");
  const pb::FieldDescriptor* phones = owner.GetDescriptor()->FindFieldByName("phones");
  ASSERT_EQ(owner_r.FieldSize(owner, phones), 2);
  const pb::Message& second_phone = owner_r.GetRepeatedMessage(owner, phones, 1);
  EXPECT_FALSE(second_phone.GetReflection()->HasField(
      second_phone, second_phone.GetDescriptor()->FindFieldByName("kind")));
  EXPECT_EQ(second_phone.GetReflection()->GetString(
                second_phone, second_phone.GetDescriptor()->FindFieldByName("number")),
            "2");
  const pb::FieldDescriptor* items = d->FindFieldByName("items");
  ASSERT_EQ(r.FieldSize(*message, items), 2);
  const pb::Message& first_item = r.GetRepeatedMessage(*message, items, 0);
  EXPECT_EQ(first_item.GetReflection()->GetInt64(
                first_item, first_item.GetDescriptor()->FindFieldByName("qty")),
            3);
}

TEST(ProtoRowEncoderTest, KeysMatchColumnsIgnoringCase) {
  auto schema = ProtoRowSchema::Make({Column("UserId", "INT64")});
  ASSERT_TRUE(schema.has_value());
  RowReader reader(*schema);
  auto message = reader.Parse(Encode(*schema, R"({"userid": 5})"));
  EXPECT_EQ(message->GetReflection()->GetInt64(*message, reader.descriptor()->field(0)), 5);
}

TEST(ProtoRowEncoderTest, OneEncoderEncodesManyRows) {
  auto schema = ProtoRowSchema::Make({Column("n", "INT64"), Column("s", "STRING")});
  ASSERT_TRUE(schema.has_value());
  RowReader reader(*schema);
  ProtoRowEncoder encoder(*schema);
  for (int i = 0; i < 100; ++i) {
    std::string out;
    ASSERT_TRUE(
        encoder.Encode(fmt::format(R"({{"n": {}, "s": "row {}"}})", i * 1000, i), out).ok());
    auto message = reader.Parse(out);
    EXPECT_EQ(message->GetReflection()->GetInt64(*message, reader.descriptor()->field(0)),
              i * 1000);
  }
}

TEST(ProtoRowEncoderTest, ErrorsNameTheColumnAndTheValue) {
  auto schema = ProtoRowSchema::Make({
      Column("id", "INT64", "REQUIRED"),
      Column("name", "STRING"),
      Column("when", "TIMESTAMP"),
      Column("day", "DATE"),
      Column("ok", "BOOL"),
      Column("blob", "BYTES"),
      Column("price", "NUMERIC"),
      Column("tags", "STRING", "REPEATED"),
      Column("address", "RECORD", "", {Column("zip", "STRING", "REQUIRED")}),
  });
  ASSERT_TRUE(schema.has_value());
  struct ErrorCase {
    std::string json;
    std::vector<std::string> mentions;
  };
  const std::vector<ErrorCase> cases = {
      {R"({"name": "x"})", {"lacks REQUIRED column id (INT64)"}},
      {R"({"id": null})", {"null in REQUIRED column id"}},
      {R"({"id": 1, "nickname": "x"})", {"not a column of the table: nickname"}},
      {R"({"id": "twelve"})", {"column id (INT64)", "'twelve'"}},
      {R"({"id": 1.5})", {"column id (INT64)", "'1.5'"}},
      {R"({"id": 99999999999999999999})", {"column id (INT64)", "99999999999999999999"}},
      {R"({"id": true})", {"column id (INT64) expects an integer, got a boolean: true"}},
      {R"({"id": 1, "name": 12})", {"column name (STRING) expects a string, got a number: 12"}},
      {R"({"id": 1, "when": "yesterday"})", {"column when (TIMESTAMP)", "'yesterday'"}},
      {R"({"id": 1, "when": "2024-02-30T00:00:00Z"})", {"column when", "2024-02-30"}},
      {R"({"id": 1, "when": "2024-01-01T25:00:00Z"})", {"column when"}},
      {R"({"id": 1, "day": "2023-02-29"})", {"column day (DATE)", "'2023-02-29'"}},
      {R"({"id": 1, "day": "10000-01-01"})", {"column day (DATE)"}},
      {R"({"id": 1, "ok": "yes"})", {"column ok (BOOL) expects true or false", "\"yes\""}},
      {R"({"id": 1, "blob": "***"})", {"column blob (BYTES)", "'***'"}},
      {R"({"id": 1, "price": "1,5"})", {"column price (NUMERIC)", "'1,5'"}},
      {R"({"id": 1, "tags": "a"})", {"column tags (REPEATED STRING) expects an array"}},
      {R"({"id": 1, "tags": ["a", null]})", {"tags[1]", "null element"}},
      {R"({"id": 1, "address": {}})", {"lacks REQUIRED column address.zip"}},
      {R"({"id": 1, "address": {"zip": "1", "extra": 2}})", {"address.extra"}},
      {R"({"id": 1, "address": "here"})", {"column address (RECORD) expects an object"}},
      {R"({"id": 1, "id": 2})", {"column id twice"}},
      {R"([1, 2])", {"record is an array, not a JSON object"}},
      {R"({"id": 1,)", {"not valid JSON"}},
      {R"({"id": 1} x)", {"not valid JSON"}},
  };
  for (const ErrorCase& test : cases) {
    SCOPED_TRACE(test.json);
    Status status = EncodeError(*schema, test.json);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(status.failure_class(), FailureClass::kDestination);
    for (const std::string& mention : test.mentions) {
      EXPECT_NE(status.message().find(mention), std::string::npos) << status.message();
    }
  }
}

TEST(ProtoRowEncoderTest, LongValuesAreCutInMessages) {
  auto schema = ProtoRowSchema::Make({Column("n", "INT64")});
  ASSERT_TRUE(schema.has_value());
  Status status = EncodeError(*schema, "{\"n\": \"" + std::string(1000, '7') + "x\"}");
  ASSERT_FALSE(status.ok());
  EXPECT_LT(status.message().size(), 200u);
}

}  // namespace
}  // namespace bizon
