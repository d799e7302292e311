// gsheets: one Google Sheets worksheet, read in a single iteration (Sheets API v4): the
// spreadsheet's metadata (spreadsheets.get) to find the worksheet by title, then all its values
// (spreadsheets.values.get), one record per row keyed by the header row. Credentials come from
// src/google/ (the inline key, else Application Default Credentials) with the read-only Sheets
// and Drive scopes, as the original asks gspread for.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bizon/clock.h"
#include "bizon/config_spec.h"
#include "bizon/registry.h"
#include "bizon/value.h"
#include "connectors/registration.h"
#include "connectors/sources/gsheets/gsheets_sheet.h"
#include "google/credentials.h"
#include "http/retry_policy.h"
#include "http/url.h"

namespace bizon {
namespace {

const std::vector<std::string> kScopes = {"https://www.googleapis.com/auth/spreadsheets.readonly",
                                          "https://www.googleapis.com/auth/drive.readonly"};

Status SourceError(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message), FailureClass::kSource);
}

Result<Value> ParseAnswer(const HttpResponse& response, std::string_view origin) {
  auto parsed = Value::FromJson(response.body);
  if (!parsed) {
    return Fail(SourceError(fmt::format("the Sheets API answered {} with invalid JSON: {}", origin,
                                        BodyExcerpt(response.body, 100))));
  }
  return std::move(*parsed);
}

class GsheetsSource final : public Source {
 public:
  GsheetsSource(std::string base_url, std::string spreadsheet_id, std::string worksheet,
                SheetReadOptions options, std::shared_ptr<HttpSession> session)
      : base_url_(std::move(base_url)),
        spreadsheet_id_(std::move(spreadsheet_id)),
        worksheet_(std::move(worksheet)),
        options_(std::move(options)),
        session_(std::move(session)) {}

  // gspread's open_by_url and worksheet(title): the metadata, then the tab by its title.
  Status CheckConnection() override {
    std::string url = JoinUrl(base_url_, "v4/spreadsheets/" + PercentEncode(spreadsheet_id_));
    QueryParams query = {{"includeGridData", "false"}};
    std::string origin = "GET " + AppendQuery(url, query);
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(url, query));
    BIZON_ASSIGN_OR_RETURN(Value metadata, ParseAnswer(response, origin));
    const Value* sheets = metadata.is_map() ? metadata.Find("sheets") : nullptr;
    if (sheets == nullptr || !sheets->is_list()) {
      return SourceError(fmt::format("the answer of {} has no 'sheets' list", origin));
    }
    std::string available;
    for (const Value& sheet : sheets->AsList()) {
      const Value* properties = sheet.is_map() ? sheet.Find("properties") : nullptr;
      std::string title = properties != nullptr ? properties->GetString("title") : "";
      if (title == worksheet_) return Status::Ok();
      available += fmt::format("{}'{}'", available.empty() ? "" : ", ", title);
    }
    return SourceError(
        fmt::format("Worksheet not found, available worksheets: [{}]: {}", available, worksheet_));
  }

  Result<SourceIteration> Get(const Value& pagination) override {
    (void)pagination;
    // The whole tab: its title as an A1 range, quoted as gspread's absolute_range_name.
    std::string range = "'";
    for (char c : worksheet_) range += c == '\'' ? std::string("''") : std::string(1, c);
    range += "'";
    std::string url = JoinUrl(base_url_, "v4/spreadsheets/" + PercentEncode(spreadsheet_id_) +
                                             "/values/" + PercentEncode(range));
    std::string origin = "GET " + url;
    BIZON_ASSIGN_OR_RETURN(HttpResponse response, session_->Get(url));
    BIZON_ASSIGN_OR_RETURN(Value answer, ParseAnswer(response, origin));
    BIZON_ASSIGN_OR_RETURN(SheetRows rows, ReadSheetValues(answer, origin));
    BIZON_ASSIGN_OR_RETURN(std::vector<std::string> records,
                           SheetRecords(std::move(rows), options_));
    SourceIteration iteration;
    int64_t now = NowMicros();
    // The original's ids: a fresh UUID per row, not stable across runs.
    for (const std::string& record : records) iteration.records.Add(NewUuidHex(), record, now);
    return iteration;
  }

 private:
  std::string base_url_;
  std::string spreadsheet_id_;
  std::string worksheet_;
  SheetReadOptions options_;
  std::shared_ptr<HttpSession> session_;
};

/// The gsheets source's options, declared once: the registry's spec and the reader both use it.
std::vector<FieldSpec> GsheetsFields() {
  return {
      Option::String("spreadsheet_url", "URL of the spreadsheet.")
          .Required()
          .NotNull()
          .Example("https://docs.google.com/spreadsheets/d/<id>/edit"),
      Option::String("worksheet_name", "Title of the worksheet (tab) to read.")
          .Required()
          .NotNull()
          .Example("Sheet1"),
      Option::String("service_account_key",
                     "Service-account key file content (JSON text); empty means Application "
                     "Default Credentials.")
          .NotNull()
          .Default("")
          .Secret(),
      Option::List("column_names", Option::String("column_name"),
                   "Header names of the columns to keep; empty keeps them all.")
          .NotNull()
          .Default(Value::EmptyList()),
      Option::Boolean("convert_column_names_to_sql_format",
                      "Rewrite header names as snake_case keys (firstName becomes first_name).")
          .NotNull()
          .Default(true),
      Option::String("base_url",
                     "Root of the Sheets API; change it only to point at a test server.")
          .NotNull()
          .Default("https://sheets.googleapis.com"),
  };
}

// The credentials of the inline key (the key's line in the file named in errors), else ADC.
Result<std::shared_ptr<GoogleCredentials>> SheetsCredentials(OptionReader& options) {
  std::string origin = "source.service_account_key";
  if (const Value* key = options.Find("service_account_key"); key != nullptr && key->mark().line) {
    origin += fmt::format(" (line {})", key->mark().line);
  }
  return MakeGoogleCredentials({.inline_key = options.String("service_account_key"),
                                .inline_key_origin = origin,
                                .scopes = kScopes});
}

Result<std::unique_ptr<Source>> MakeGsheetsSource(const SourceContext& context) {
  OptionReader options(Option::Object("source", GsheetsFields()), context.config);
  std::string url = options.String("spreadsheet_url");
  std::optional<std::string> id = ExtractSpreadsheetId(url);
  if (!id) {
    return Fail(
        InvalidArgumentError("source.spreadsheet_url has no spreadsheet id (expected "
                             "https://docs.google.com/spreadsheets/d/<id>/...): " +
                             url));
  }
  SheetReadOptions sheet{.convert_to_sql = options.Boolean("convert_column_names_to_sql_format")};
  if (const Value* names = options.Find("column_names"); names != nullptr && names->is_list()) {
    for (const Value& name : names->AsList()) sheet.column_names.push_back(name.ToDisplayString());
  }
  std::string base_url = options.String("base_url");
  std::string worksheet = options.String("worksheet_name");
  BIZON_RETURN_IF_ERROR(options.status());
  BIZON_ASSIGN_OR_RETURN(HttpPolicy policy, HttpPolicy::FromSourceConfig(context.config));
  BIZON_ASSIGN_OR_RETURN(std::shared_ptr<GoogleCredentials> credentials,
                         SheetsCredentials(options));
  auto session = std::make_shared<HttpSession>(HttpSessionOptions{
      .policy = std::move(policy),
      .authenticator = std::make_shared<GoogleAuthenticator>(std::move(credentials))});
  return std::make_unique<GsheetsSource>(std::move(base_url), std::move(*id), std::move(worksheet),
                                         std::move(sheet), std::move(session));
}

}  // namespace

Status RegisterGsheetsSource(ConnectorRegistry& registry) {
  return registry.AddSource({
      .name = "gsheets",
      .description = "One Google Sheets worksheet, one record per row keyed by the header row.",
      .streams = {{"worksheet", false, "Rows of the configured worksheet."}},
      .config = {.fields = GsheetsFields(), .unknown_keys = UnknownKeys::kWarn},
      .factory = MakeGsheetsSource,
  });
}

}  // namespace bizon
