// ObjectStore: the few calls the object-store destinations (`gcs`, `s3`) make on a bucket.
//
// Names are object names inside the store's bucket (no leading slash). Every call is idempotent,
// so a destination that crashed half-way through publishing can run the same calls again: Put
// overwrites, Copy overwrites its target, Delete of a missing object succeeds. Failures carry
// failure class destination; a 429/5xx or a lost connection is retried inside the call first.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bizon/status.h"
#include "bizon/value.h"

namespace bizon {

struct StoredObject {
  std::string name;
  int64_t size = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  /// Uploads the local file at `local_path` as `name` (replacing what is there).
  virtual Status PutFile(const std::string& name, const std::string& local_path) = 0;
  /// Uploads `data` as `name` (replacing what is there).
  virtual Status Put(const std::string& name, const std::string& data) = 0;
  /// The content of `name`; kNotFound when there is none.
  virtual Result<std::string> Get(const std::string& name) = 0;
  /// Server-side copy of `from` to `to` (replacing what is there).
  virtual Status Copy(const std::string& from, const std::string& to) = 0;
  /// Removes `name`; succeeds when it is already gone.
  virtual Status Delete(const std::string& name) = 0;
  /// Every object whose name starts with `prefix`, in name order.
  virtual Result<std::vector<StoredObject>> List(const std::string& prefix) = 0;
  /// `gs://bucket/name` or `s3://bucket/name`, for messages.
  virtual std::string Uri(const std::string& name) const = 0;
};

}  // namespace bizon
