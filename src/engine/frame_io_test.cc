#include "engine/frame_io.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace bizon {
namespace {

// A memory file holds what the peer wrote, read back from the start: no reader thread needed.
class FrameFile {
 public:
  FrameFile() : fd_(memfd_create("frame_io_test", 0)) {}
  ~FrameFile() { close(fd_); }
  FrameFile(const FrameFile&) = delete;
  FrameFile& operator=(const FrameFile&) = delete;

  void Write(std::string_view bytes) {
    ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void WriteSize(uint64_t size) {
    Write(std::string_view(reinterpret_cast<const char*>(&size), sizeof(size)));
  }
  int Rewound() {
    lseek(fd_, 0, SEEK_SET);
    return fd_;
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

TEST(FrameIoTest, FramesComeBackInOrderThenEndOfStream) {
  FrameFile file;
  std::string large(20u << 20, 'x');  // Larger than one read chunk.
  large.back() = 'y';
  ASSERT_TRUE(WriteFrame(file.fd(), "first").ok());
  ASSERT_TRUE(WriteFrame(file.fd(), "").ok());
  ASSERT_TRUE(WriteFrame(file.fd(), large).ok());
  int fd = file.Rewound();
  auto first = ReadFrame(fd);
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ(**first, "first");
  auto empty = ReadFrame(fd);
  ASSERT_TRUE(empty && empty->has_value());
  EXPECT_EQ(**empty, "");
  auto big = ReadFrame(fd);
  ASSERT_TRUE(big && big->has_value());
  EXPECT_EQ(**big, large);
  auto end = ReadFrame(fd);
  ASSERT_TRUE(end);
  EXPECT_FALSE(end->has_value());
}

TEST(FrameIoTest, StreamCutInsideTheSizeIsAnError) {
  FrameFile file;
  file.Write("\x05\x00\x00");
  auto frame = ReadFrame(file.Rewound());
  ASSERT_FALSE(frame);
  EXPECT_EQ(frame.error().code(), StatusCode::kAborted);
}

TEST(FrameIoTest, StreamCutInsideTheBodyIsAnError) {
  FrameFile file;
  file.WriteSize(10);
  file.Write("abc");
  auto frame = ReadFrame(file.Rewound());
  ASSERT_FALSE(frame);
  EXPECT_NE(frame.error().message().find("stopped in the middle of a message"), std::string::npos);
}

// Found by fuzz/fuzz_queue_frames: a corrupt size used to be allocated up front (a terabyte
// here), which aborts the process instead of reporting the broken stream.
TEST(FrameIoTest, CorruptHugeSizeIsAnErrorNotAnAllocation) {
  FrameFile file;
  file.WriteSize(uint64_t{1} << 40);
  file.Write("only a few bytes");
  auto frame = ReadFrame(file.Rewound());
  ASSERT_FALSE(frame);
  EXPECT_EQ(frame.error().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace bizon
