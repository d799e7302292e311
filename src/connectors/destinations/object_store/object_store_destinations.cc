// The `gcs` and `s3` destinations: Parquet parts in a bucket, published exactly once
// (PartsDestination over ObjectPartStore). They differ only in how the ObjectStore is made.
#include <fmt/format.h>

#include "connectors/destinations/destination_options.h"
#include "connectors/destinations/object_store/gcs_object_store.h"
#include "connectors/destinations/object_store/object_part_store.h"
#include "connectors/destinations/object_store/s3_object_store.h"
#include "connectors/destinations/parquet/parts_destination.h"
#include "connectors/registration.h"
#include "google/credentials.h"

namespace bizon {
namespace {

/// The options both destinations declare: where in the bucket, and how parts are written.
std::vector<FieldSpec> BucketFields(std::string_view store) {
  return {
      {.name = "bucket",
       .type = FieldType::kString,
       .description = fmt::format("The {} bucket the tables are written to.", store),
       .required = true,
       .nullable = false},
      {.name = "prefix",
       .type = FieldType::kString,
       .description = "Object name prefix of every table (`<prefix>/<destination_id>/`); empty "
                      "writes at the bucket's root.",
       .nullable = false,
       .default_value = Value("")},
      {.name = "format",
       .type = FieldType::kEnum,
       .description = "File format of the parts: parquet, or json (JSON lines, `.json` parts).",
       .default_value = Value("parquet"),
       .enum_values = {"parquet", "json"}},
      ParquetCompressionField(),
      ParquetPartSizeField(),
  };
}

std::string DefaultDestinationId(const DestinationContext& context) {
  std::string id = ReadCommonDestinationOptions(context.config).destination_id;
  return id.empty() ? context.sync.source_name + "_" + context.sync.stream_name : id;
}

std::vector<ConfigRuleViolation> CheckBucketConfig(const Value& config, SyncMode) {
  OptionReader declared(Option::Object("config", BucketFields("bucket")), config);
  if (declared.String("format") == "json") return CheckParquetSchemas(config);
  return CheckParquetOutput(config);
}

/// The destination over `store`, `label` naming it in log lines; `declared` reads the block.
Result<std::unique_ptr<Destination>> MakeObjectStoreDestination(const DestinationContext& context,
                                                                OptionReader& declared,
                                                                std::unique_ptr<ObjectStore> store,
                                                                std::string label) {
  PartsDestinationOptions options{.sync = context.sync,
                                  .job_abandoned = context.job_abandoned,
                                  .default_destination_id = DefaultDestinationId(context),
                                  .label = std::move(label)};
  if (declared.String("format") == "json") options.format = PartFormat::kNdjson;
  std::string prefix = declared.String("prefix");
  BIZON_RETURN_IF_ERROR(ReadPartsOptions(declared, context.config, options));
  if (Status checked = CheckObjectDestinationId(options.default_destination_id); !checked.ok()) {
    return Fail(InvalidArgumentError("destination.config.destination_id: " + checked.message()));
  }
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<ObjectPartStore> parts,
                         ObjectPartStore::Make(std::move(store), prefix,
                                               options.default_destination_id, context.sync.name));
  return std::unique_ptr<Destination>(
      std::make_unique<PartsDestination>(std::move(options), std::move(parts)));
}

std::vector<FieldSpec> GcsFields() {
  std::vector<FieldSpec> fields = BucketFields("Cloud Storage");
  fields.push_back(GoogleAuthenticationField());
  return fields;
}

Result<std::unique_ptr<Destination>> MakeGcsDestination(const DestinationContext& context) {
  OptionReader declared(Option::Object("config", GcsFields()), context.config);
  GcsClientOptions client_options;
  OptionReader authentication = declared.Object("authentication");
  if (std::string key = authentication.String("service_account_key"); !key.empty()) {
    const Value* node = authentication.Find("service_account_key");
    std::string origin = "destination.config.authentication.service_account_key";
    if (node->mark().line > 0) origin += fmt::format(" (line {})", node->mark().line);
    BIZON_ASSIGN_OR_RETURN(client_options.credentials,
                           MakeGoogleCredentials({.inline_key = std::move(key),
                                                  .inline_key_origin = origin,
                                                  .scopes = {std::string(kGcsReadWriteScope)}}));
  }
  auto client = GcsClient::Make(std::move(client_options));
  if (!client) {
    return Fail(client.error().WithContext("gcs destination: Cloud Storage client"));
  }
  std::shared_ptr<GcsClient> shared(std::move(*client));
  return MakeObjectStoreDestination(
      context, declared, MakeGcsObjectStore(std::move(shared), StringOrEmpty(declared, "bucket")),
      "gcs destination");
}

std::vector<FieldSpec> S3Fields() {
  std::vector<FieldSpec> fields = BucketFields("S3");
  auto text = [](std::string name, std::string description, std::string fallback, bool secret) {
    return FieldSpec{.name = std::move(name),
                     .type = FieldType::kString,
                     .description = std::move(description),
                     .nullable = false,
                     .default_value = Value(std::move(fallback)),
                     .secret = secret};
  };
  fields.push_back(text("endpoint",
                        "scheme://host[:port] of an S3-compatible server, addressed path-style; "
                        "empty: AWS itself.",
                        "", false));
  fields.push_back(
      text("region", "The bucket's region (signs every request).", "us-east-1", false));
  fields.push_back(text("access_key_id",
                        "Access key id; empty: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and "
                        "AWS_SESSION_TOKEN from the environment.",
                        "", true));
  fields.push_back(text("secret_access_key", "Secret access key.", "", true));
  fields.push_back(text("session_token", "Session token of temporary credentials.", "", true));
  return fields;
}

Result<std::unique_ptr<Destination>> MakeS3Destination(const DestinationContext& context) {
  OptionReader declared(Option::Object("config", S3Fields()), context.config);
  S3Settings settings{.bucket = StringOrEmpty(declared, "bucket"),
                      .region = declared.String("region"),
                      .endpoint = declared.String("endpoint"),
                      .access_key_id = declared.String("access_key_id"),
                      .secret_access_key = declared.String("secret_access_key"),
                      .session_token = declared.String("session_token")};
  BIZON_RETURN_IF_ERROR(declared.status());
  BIZON_ASSIGN_OR_RETURN(std::unique_ptr<ObjectStore> store,
                         MakeS3ObjectStore(std::move(settings)));
  return MakeObjectStoreDestination(context, declared, std::move(store), "s3 destination");
}

}  // namespace

Status RegisterGcsDestination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "gcs",
      .description = "Parquet files in a Google Cloud Storage bucket, published exactly once.",
      .alias = "gcs",
      .config = {.fields = GcsFields(), .unknown_keys = UnknownKeys::kError},
      .check_destination_id = [](std::string_view id,
                                 SyncMode) { return CheckObjectDestinationId(id); },
      .check_config = CheckBucketConfig,
      .factory = MakeGcsDestination,
  });
}

Status RegisterS3Destination(ConnectorRegistry& registry) {
  return registry.AddDestination({
      .name = "s3",
      .description = "Parquet files in an S3 (or S3-compatible) bucket, published exactly once.",
      .alias = "s3",
      .config = {.fields = S3Fields(), .unknown_keys = UnknownKeys::kError},
      .check_destination_id = [](std::string_view id,
                                 SyncMode) { return CheckObjectDestinationId(id); },
      .check_config = CheckBucketConfig,
      .factory = MakeS3Destination,
  });
}

}  // namespace bizon
