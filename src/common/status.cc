#include "bizon/status.h"

#include <string>

namespace bizon {

std::string_view ToString(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kUnavailable:
      return "unavailable";
    case StatusCode::kAborted:
      return "aborted";
    case StatusCode::kFailedPrecondition:
      return "failed precondition";
    case StatusCode::kDataLoss:
      return "data loss";
    case StatusCode::kCancelled:
      return "cancelled";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kInternal:
      return "internal";
  }
  return "unknown";
}

std::string_view ToString(FailureClass failure_class) {
  switch (failure_class) {
    case FailureClass::kNone:
      return "";
    case FailureClass::kConfig:
      return "config";
    case FailureClass::kSource:
      return "source";
    case FailureClass::kDestination:
      return "destination";
    case FailureClass::kBackend:
      return "backend";
    case FailureClass::kQueue:
      return "queue";
    case FailureClass::kTransform:
      return "transform";
    case FailureClass::kStream:
      return "stream";
    case FailureClass::kKilled:
      return "killed";
    case FailureClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

Status Status::WithFailureClass(FailureClass failure_class) const& {
  Status copy = *this;
  return std::move(copy).WithFailureClass(failure_class);
}

Status Status::WithFailureClass(FailureClass failure_class) && {
  if (failure_class_ == FailureClass::kNone || failure_class_ == FailureClass::kUnknown) {
    failure_class_ = failure_class;
  }
  return std::move(*this);
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_, failure_class_);
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(bizon::ToString(code_)) + ": " + message_;
}

}  // namespace bizon
