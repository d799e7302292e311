// The Storage Write fake (fake_bigquery_write.h) as a process of its own, for the end-to-end
// tests that run `bizon` against it where the emulator lacks a feature (change data capture).
// It listens on 127.0.0.1 at a free port, prints "127.0.0.1:<port>" as its first line, then
// answers one command a line on stdin, one line each on stdout, until stdin closes:
//
//   key <table> <column>[,<column>...]   declares a table's primary key ("ok")
//   rows <table>                         the table's CDC rows, a JSON array of objects
//   changes                              how many CDC changes were received
//   violations                           the off-contract requests, a JSON array of strings
//
// <table> is projects/<p>/datasets/<d>/tables/<t>.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bizon/value.h"
#include "fakes/fake_bigquery_write.h"

int main() {
  using bizon::testing_support::FakeBigQueryWrite;
  std::unique_ptr<FakeBigQueryWrite> fake = FakeBigQueryWrite::Start({});
  if (!fake) {
    std::cerr << "fake_bigquery_write_server: could not listen\n";
    return 1;
  }
  std::cout << fake->endpoint() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, table, columns;
    words >> command >> table >> columns;
    if (command == "key") {
      std::vector<std::string> key;
      std::istringstream names(columns);
      for (std::string name; std::getline(names, name, ',');) key.push_back(name);
      fake->DeclarePrimaryKey(table, std::move(key));
      std::cout << "ok" << std::endl;
    } else if (command == "rows") {
      std::string out = "[";
      for (const std::string& row : fake->CdcRows(table)) {
        if (out.size() > 1) out += ",";
        out += row;
      }
      std::cout << out << "]" << std::endl;
    } else if (command == "changes") {
      std::cout << fake->cdc_changes() << std::endl;
    } else if (command == "violations") {
      bizon::Value::List violations;
      for (const std::string& violation : fake->violations()) violations.emplace_back(violation);
      std::cout << bizon::Value(std::move(violations)).ToJson() << std::endl;
    } else {
      std::cout << "unknown command" << std::endl;
    }
  }
  return 0;
}
