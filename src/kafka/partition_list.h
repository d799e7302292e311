// PartitionList: a list of topic partitions with offsets, as librdkafka takes and gives them.
#pragma once

#include <cstdint>
#include <string_view>

// NOLINTNEXTLINE(readability-identifier-naming): librdkafka's type
struct rd_kafka_topic_partition_list_s;

namespace bizon::kafka {

/// One entry of a PartitionList.
struct TopicPartition {
  std::string_view topic;
  int32_t partition = 0;
  /// The offset to start from or to commit; negative for the special offsets (kOffsetStored...).
  int64_t offset = 0;
};

/// Owns its list, unless it was borrowed from librdkafka for a rebalance callback's duration.
class PartitionList {
 public:
  explicit PartitionList(int capacity = 0);
  /// A view of a list librdkafka owns (the rebalance callback's).
  static PartitionList Borrow(rd_kafka_topic_partition_list_s* list);
  ~PartitionList();
  PartitionList(PartitionList&& other) noexcept;
  PartitionList& operator=(PartitionList&& other) noexcept;
  PartitionList(const PartitionList&) = delete;
  PartitionList& operator=(const PartitionList&) = delete;

  /// Appends `topic`'s `partition`, to start from (or commit) `offset`.
  void Add(std::string_view topic, int32_t partition, int64_t offset);
  int size() const;
  bool empty() const { return size() == 0; }
  /// Entry `index`; its topic lives as long as the list.
  TopicPartition at(int index) const;
  void SetOffset(int index, int64_t offset);

  rd_kafka_topic_partition_list_s* get() const { return list_; }

 private:
  PartitionList(rd_kafka_topic_partition_list_s* list, bool owned) : list_(list), owned_(owned) {}

  rd_kafka_topic_partition_list_s* list_;
  bool owned_ = true;
};

}  // namespace bizon::kafka
