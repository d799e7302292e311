#include "kafka/partition_list.h"

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>

namespace bizon::kafka {

PartitionList::PartitionList(int capacity) : list_(rd_kafka_topic_partition_list_new(capacity)) {}

PartitionList PartitionList::Borrow(rd_kafka_topic_partition_list_t* list) {
  return {list, /*owned=*/false};
}

PartitionList::~PartitionList() {
  if (owned_ && list_ != nullptr) rd_kafka_topic_partition_list_destroy(list_);
}

PartitionList::PartitionList(PartitionList&& other) noexcept
    : list_(std::exchange(other.list_, nullptr)), owned_(other.owned_) {}

PartitionList& PartitionList::operator=(PartitionList&& other) noexcept {
  if (this != &other) {
    if (owned_ && list_ != nullptr) rd_kafka_topic_partition_list_destroy(list_);
    list_ = std::exchange(other.list_, nullptr);
    owned_ = other.owned_;
  }
  return *this;
}

void PartitionList::Add(std::string_view topic, int32_t partition, int64_t offset) {
  rd_kafka_topic_partition_list_add(list_, std::string(topic).c_str(), partition)->offset = offset;
}

int PartitionList::size() const { return list_ != nullptr ? list_->cnt : 0; }

TopicPartition PartitionList::at(int index) const {
  const rd_kafka_topic_partition_t& entry = list_->elems[index];
  return {.topic = entry.topic, .partition = entry.partition, .offset = entry.offset};
}

void PartitionList::SetOffset(int index, int64_t offset) { list_->elems[index].offset = offset; }

}  // namespace bizon::kafka
