#include "connectors/destinations/object_store/gcs_object_store.h"

#include <fmt/format.h>

#include <algorithm>

namespace bizon {
namespace {

class GcsObjectStore final : public ObjectStore {
 public:
  GcsObjectStore(std::shared_ptr<GcsClient> client, std::string bucket)
      : client_(std::move(client)), bucket_(std::move(bucket)) {}

  Status PutFile(const std::string& name, const std::string& local_path) override {
    return Checked(client_->UploadFile(bucket_, name, local_path), "upload", name);
  }

  Status Put(const std::string& name, const std::string& data) override {
    return Checked(client_->Upload(bucket_, name, data), "upload", name);
  }

  Result<std::string> Get(const std::string& name) override {
    auto data = client_->Download(bucket_, name);
    if (!data) return Fail(Tagged(data.error(), "download", name));
    return std::move(*data);
  }

  Status Copy(const std::string& from, const std::string& to) override {
    return Checked(client_->Copy(bucket_, from, bucket_, to), "copy", from);
  }

  Status Delete(const std::string& name) override {
    Status deleted = client_->Delete(bucket_, name);
    if (deleted.code() == StatusCode::kNotFound) return Status::Ok();
    return Tagged(deleted, "delete", name);
  }

  Result<std::vector<StoredObject>> List(const std::string& prefix) override {
    auto objects = client_->List(bucket_, prefix);
    if (!objects) return Fail(Tagged(objects.error(), "list", prefix));
    std::vector<StoredObject> stored;
    stored.reserve(objects->size());
    for (const GcsObject& object : *objects) stored.push_back({object.name, object.size});
    std::ranges::sort(stored, {}, &StoredObject::name);
    return stored;
  }

  std::string Uri(const std::string& name) const override {
    return fmt::format("gs://{}/{}", bucket_, name);
  }

 private:
  /// Failures of the store are the destination's, with the object they concern.
  Status Tagged(const Status& status, std::string_view what, const std::string& name) const {
    if (status.ok()) return status;
    return status.WithContext(fmt::format("cannot {} {}", what, Uri(name)))
        .Reclassified(FailureClass::kDestination);
  }
  template <typename T>
  Status Checked(const Result<T>& result, std::string_view what, const std::string& name) const {
    return result ? Status::Ok() : Tagged(result.error(), what, name);
  }

  std::shared_ptr<GcsClient> client_;
  std::string bucket_;
};

}  // namespace

std::unique_ptr<ObjectStore> MakeGcsObjectStore(std::shared_ptr<GcsClient> client,
                                                std::string bucket) {
  return std::make_unique<GcsObjectStore>(std::move(client), std::move(bucket));
}

}  // namespace bizon
