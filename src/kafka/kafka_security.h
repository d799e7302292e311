// What the kafka source and the kafka queue share about authenticated and encrypted brokers:
// turning the last client error of a failed connection into a message that says what to fix.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bizon::kafka {

using ClientSettings = std::vector<std::pair<std::string, std::string>>;

/// The SASL mechanism the settings select ("" when none is set).
std::string SaslMechanism(const ClientSettings& settings);

/// True when the linked librdkafka computes SCRAM proofs that Kafka 4 brokers reject: versions
/// before 2.6.1 append the client nonce twice, which brokers since 4.0 check strictly.
bool ScramRejectedByKafka4();

/// Text appended to a failed connection's message: "; last client error: <error>" and, for a
/// SCRAM authentication failure with such a librdkafka, why. Empty when `last_error` is.
/// `last_error` must already be free of secrets.
std::string ConnectionHint(const ClientSettings& settings, std::string_view last_error);

}  // namespace bizon::kafka
