// Walks every connector RegisterBuiltinConnectors() declares and checks what the config layer,
// `bizon config schema` and the reference docs rely on: a description on the connector, its
// streams and every option; snake_case names; the unknown-key policy of each kind; and, for the
// connectors declared before they are built (no factory), that the README says so.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bizon/registry.h"
#include "connectors/registration.h"

namespace bizon {
namespace {

bool IsSnakeCase(std::string_view name) {
  static const std::regex kSnake("[a-z][a-z0-9]*(_[a-z0-9]+)*");
  return std::regex_match(name.begin(), name.end(), kSnake);
}

// Every option below `fields`, as "<path>: <problem>".
// The item spec of a list or map is no key of its own (the reference docs show its fields under
// `<list>[].`), and a variant's discriminator field is described by the variant's heading
// (`type: oauth`), so neither needs a description here.
void CheckFields(const std::vector<FieldSpec>& fields, const std::string& path,
                 std::vector<std::string>& problems, std::string_view discriminator = {}) {
  for (const FieldSpec& field : fields) {
    std::string at = path.empty() ? field.name : path + "." + field.name;
    if (!IsSnakeCase(field.name)) problems.push_back(at + ": the name is not snake_case");
    if (field.description.empty() && field.name != discriminator) {
      problems.push_back(at + ": no description");
    }
    if (field.type == FieldType::kEnum && field.enum_values.empty()) {
      problems.push_back(at + ": an enum without values");
    }
    CheckFields(field.fields, at, problems);
    for (const VariantSpec& variant : field.variants) {
      if (variant.description.empty())
        problems.push_back(at + "=" + variant.tag + ": no description");
      CheckFields(variant.fields, at + "[" + field.discriminator + "=" + variant.tag + "]",
                  problems, field.discriminator);
    }
    for (const FieldSpec& item : field.items) CheckFields(item.fields, at + "[]", problems);
    for (const FieldSpec& alternative : field.one_of) {
      CheckFields(alternative.fields, at, problems);
    }
  }
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

// The README's connector table: for each kind ("source", "destination"), the backticked names of
// each row mapped to that row's status cell.
std::map<std::string, std::map<std::string, std::string>> ReadmeConnectorStatus() {
  std::ifstream readme(std::string(BIZON_SOURCE_DIR) + "/README.md");
  EXPECT_TRUE(readme.good()) << "README.md not found under " << BIZON_SOURCE_DIR;
  std::map<std::string, std::map<std::string, std::string>> status;
  static const std::regex kRow(R"(^\| (source|destination) \| (.*) \| ([^|]*) \|\s*$)");
  static const std::regex kName("`([a-z0-9_]+)`");
  std::string line;
  while (std::getline(readme, line)) {
    std::smatch row;
    if (!std::regex_match(line, row, kRow)) continue;
    std::string names = row[2];
    for (std::sregex_iterator it(names.begin(), names.end(), kName), end; it != end; ++it) {
      status[row[1]][(*it)[1]] = row[3];
    }
  }
  return status;
}

class ConnectorRegistryTest : public testing::Test {
 protected:
  void SetUp() override {
    Status registered = RegisterBuiltinConnectors(registry_);
    ASSERT_TRUE(registered.ok()) << registered.ToString();
  }
  ConnectorRegistry registry_;
};

TEST_F(ConnectorRegistryTest, RegistersSourcesAndDestinations) {
  EXPECT_GE(registry_.sources().size(), 10u);
  EXPECT_GE(registry_.destinations().size(), 4u);
  // Registering the built-ins again is refused: every name is taken.
  EXPECT_FALSE(RegisterBuiltinConnectors(registry_).ok());
  for (const SourceDescriptor* source : registry_.sources()) {
    EXPECT_EQ(registry_.FindSource(source->name), source);
  }
  for (const DestinationDescriptor* destination : registry_.destinations()) {
    EXPECT_EQ(registry_.FindDestination(destination->name), destination);
  }
}

TEST_F(ConnectorRegistryTest, EverySourceIsDescribedAndSnakeCase) {
  std::vector<std::string> problems;
  for (const SourceDescriptor* source : registry_.sources()) {
    const std::string& name = source->name;
    if (!IsSnakeCase(name)) problems.push_back(name + ": the name is not snake_case");
    if (source->description.empty()) problems.push_back(name + ": no description");
    if (source->streams.empty()) problems.push_back(name + ": no stream");
    for (const StreamSpec& stream : source->streams) {
      if (!IsSnakeCase(stream.name)) {
        problems.push_back(name + " stream " + stream.name + ": not snake_case");
      }
      if (stream.description.empty()) {
        problems.push_back(name + " stream " + stream.name + ": no description");
      }
    }
    if (source->check_stream && !source->streams_from_config) {
      problems.push_back(name + ": check_stream is only used with streams_from_config");
    }
    // Keys under `source:` sit beside the common ones and the original ignored extra keys:
    // sources warn about unknown keys rather than refuse them.
    if (source->config.unknown_keys != UnknownKeys::kWarn) {
      problems.push_back(name + ": unknown keys under source: are not warned about");
    }
    CheckFields(source->config.fields, "source " + name + ": ", problems);
  }
  EXPECT_TRUE(problems.empty()) << Join(problems);
}

TEST_F(ConnectorRegistryTest, EveryDestinationIsDescribedAndSnakeCase) {
  std::vector<std::string> problems;
  for (const DestinationDescriptor* destination : registry_.destinations()) {
    const std::string& name = destination->name;
    if (!IsSnakeCase(name)) problems.push_back(name + ": the name is not snake_case");
    if (destination->description.empty()) problems.push_back(name + ": no description");
    if (!IsSnakeCase(destination->alias)) {
      problems.push_back(name + ": the default alias '" + destination->alias +
                         "' is not snake_case");
    }
    // destination.config is the connector's alone: an unknown key there is a mistake.
    if (destination->config.unknown_keys != UnknownKeys::kError) {
      problems.push_back(name + ": unknown keys under destination.config are not refused");
    }
    for (const std::string& key : destination->destination_id_keys) {
      bool declared = false;
      for (const FieldSpec& field : destination->config.fields) declared |= field.name == key;
      if (!declared) problems.push_back(name + ": destination_id_keys names undeclared " + key);
    }
    CheckFields(destination->config.fields, "destination " + name + ": ", problems);
  }
  EXPECT_TRUE(problems.empty()) << Join(problems);
}

TEST_F(ConnectorRegistryTest, DeclaredOnlyConnectorsAreTheOnesTheReadmeCallsNotBuilt) {
  auto readme = ReadmeConnectorStatus();
  std::vector<std::string> declared_only, problems;
  auto check = [&](const std::string& kind, const std::string& name, bool built) {
    if (!built) declared_only.push_back(kind + " " + name);
    auto row = readme[kind].find(name);
    if (row == readme[kind].end()) {
      problems.push_back(kind + " " + name + ": not in the README's connector table");
      return;
    }
    bool readme_built = row->second.find("not built") == std::string::npos &&
                        row->second.find("built") != std::string::npos;
    if (readme_built != built) {
      problems.push_back(kind + " " + name + ": the README says '" + row->second + "' but it " +
                         (built ? "has a factory" : "has none"));
    }
  };
  for (const SourceDescriptor* source : registry_.sources()) {
    check("source", source->name, source->factory != nullptr);
  }
  for (const DestinationDescriptor* destination : registry_.destinations()) {
    check("destination", destination->name, destination->factory != nullptr);
  }
  std::ostringstream list;
  for (const std::string& name : declared_only) list << " " << name;
  std::cout << "Declared only (no factory):" << (declared_only.empty() ? " none" : list.str())
            << "\n";
  EXPECT_TRUE(problems.empty()) << Join(problems);
}

}  // namespace
}  // namespace bizon
