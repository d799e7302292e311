// Status and Result<T>: how every fallible function in bizon reports failure.
//
// The code says what the caller should do next; the failure class says which part of the
// pipeline failed, with the same names the original bizon writes into `failure_class`.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace bizon {

/// What the caller should do next.
enum class StatusCode {
  kOk,
  kInvalidArgument,     // The user must fix the input (config, YAML, CLI flags).
  kNotFound,            // The named thing does not exist; the user must fix the name.
  kUnavailable,         // An external system is down or throttling: retry the call later.
  kAborted,             // A conflict or interrupted transaction: retry the whole batch.
  kFailedPrecondition,  // The system is not in a state to do this; a human must act first.
  kDataLoss,            // Stored state is corrupt or inconsistent; stop and investigate.
  kCancelled,           // The operation was stopped on purpose (signal, other side failed).
  kUnimplemented,       // The feature is not built yet.
  kInternal,            // A bug in bizon.
};

/// Which part of the pipeline failed. String values match the original's `failure_class`.
enum class FailureClass {
  kNone,
  kConfig,
  kSource,
  kDestination,
  kBackend,
  kQueue,
  kTransform,
  kStream,
  kKilled,
  kUnknown,
};

std::string_view ToString(StatusCode code);
std::string_view ToString(FailureClass failure_class);

/// The outcome of an operation that returns no value. Cheap to copy when ok.
// Every member has an initializer, so no copy can read garbage; clang's analyzer says otherwise
// when it copies a Status it reached through a pointer it could not follow.
class [[nodiscard]] Status {  // NOLINT(clang-analyzer-core.uninitialized.Assign)
 public:
  Status() = default;
  Status(StatusCode code, std::string message, FailureClass failure_class = FailureClass::kNone)
      : code_(code), failure_class_(failure_class), message_(std::move(message)) {}

  /// Lets BIZON_RETURN_IF_ERROR and `return Fail(...)` work in functions returning Status.
  Status(std::unexpected<Status> failure)  // NOLINT(google-explicit-constructor)
      : Status(std::move(failure.error())) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  FailureClass failure_class() const { return failure_class_; }
  const std::string& message() const { return message_; }

  /// Returns a copy tagged with `failure_class`, unless one is already set.
  Status WithFailureClass(FailureClass failure_class) const&;
  Status WithFailureClass(FailureClass failure_class) &&;

  /// Returns a copy tagged with `failure_class`, replacing the class it had: for a caller that
  /// knows which part of the pipeline a step belongs to whatever failed inside it.
  Status Reclassified(FailureClass failure_class) const {
    return ok() ? *this : Status(code_, message_, failure_class);
  }

  /// Returns a copy whose message is "<context>: <message>".
  Status WithContext(std::string_view context) const;

  /// "invalid argument: <message>", for logs and errors shown to the operator.
  std::string ToString() const;

  /// Marks a deliberately ignored status; grep for it when auditing error handling.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  FailureClass failure_class_ = FailureClass::kNone;
  std::string message_;
};

// Each factory takes the failure class of the place the failure arises; the default is what
// that code usually means (a bad argument is the user's config unless its caller says otherwise).
inline Status InvalidArgumentError(std::string message,
                                   FailureClass failure_class = FailureClass::kConfig) {
  return {StatusCode::kInvalidArgument, std::move(message), failure_class};
}
inline Status NotFoundError(std::string message, FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kNotFound, std::move(message), failure_class};
}
inline Status UnavailableError(std::string message,
                               FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kUnavailable, std::move(message), failure_class};
}
inline Status AbortedError(std::string message, FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kAborted, std::move(message), failure_class};
}
inline Status FailedPreconditionError(std::string message,
                                      FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kFailedPrecondition, std::move(message), failure_class};
}
inline Status DataLossError(std::string message, FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kDataLoss, std::move(message), failure_class};
}
inline Status CancelledError(std::string message,
                             FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kCancelled, std::move(message), failure_class};
}
inline Status UnimplementedError(std::string message,
                                 FailureClass failure_class = FailureClass::kNone) {
  return {StatusCode::kUnimplemented, std::move(message), failure_class};
}
inline Status InternalError(std::string message,
                            FailureClass failure_class = FailureClass::kUnknown) {
  return {StatusCode::kInternal, std::move(message), failure_class};
}

/// A value or the Status explaining why there is none. [[nodiscard]] (std::expected is not, in
/// GCC 12's library): a dropped Result is a build error, and a deliberate one says IgnoreError().
template <typename T>
class [[nodiscard]] Result : public std::expected<T, Status> {
 public:
  using std::expected<T, Status>::expected;
  Result(std::expected<T, Status> other)  // NOLINT(google-explicit-constructor)
      : std::expected<T, Status>(std::move(other)) {}

  /// Marks a deliberately ignored result; grep for it when auditing error handling.
  void IgnoreError() const {}
};

/// Lets `return SomeError(...)` work in functions returning Result<T>.
inline std::unexpected<Status> Fail(Status status) { return std::unexpected(std::move(status)); }

}  // namespace bizon

/// Returns early from the enclosing function when `expr` (a Status) is not ok.
#define BIZON_RETURN_IF_ERROR(expr)                                          \
  do {                                                                       \
    ::bizon::Status bizon_status_ = (expr);                                  \
    if (!bizon_status_.ok()) return ::bizon::Fail(std::move(bizon_status_)); \
  } while (false)

#define BIZON_CONCAT_INNER_(a, b) a##b
#define BIZON_CONCAT_(a, b) BIZON_CONCAT_INNER_(a, b)

/// `BIZON_ASSIGN_OR_RETURN(auto x, MakeX());` unwraps a Result or returns its Status. Works in
/// functions returning Status or Result<U>.
#define BIZON_ASSIGN_OR_RETURN(lhs, expr) \
  BIZON_ASSIGN_OR_RETURN_IMPL_(BIZON_CONCAT_(bizon_result_, __LINE__), lhs, expr)
// `result` names the variable declared and `lhs` is a declaration (`auto x`): neither can be put
// in parentheses.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define BIZON_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr)                     \
  auto result = (expr);                                                     \
  if (!result.has_value()) return ::bizon::Fail(std::move(result).error()); \
  lhs = std::move(result).value()
// NOLINTEND(bugprone-macro-parentheses)
