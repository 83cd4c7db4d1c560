// stream_bytes copies exactly whatever the destination's alignment and the length (the aligned
// streaming body, the unaligned head and the tail), and writes nothing outside [dst, dst + n).

#include "chute/util/stream_copy.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

namespace chute {
namespace {

TEST(StreamCopy, CopiesExactlyAtEveryAlignmentAndLength) {
  std::vector<std::byte> src(600);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 7 + 3);
  constexpr std::byte kGuard{0xA5};
  for (size_t dst_offset = 0; dst_offset < 16; ++dst_offset) {
    for (size_t src_offset : {size_t{0}, size_t{1}, size_t{5}}) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{63}, size_t{64},
                       size_t{65}, size_t{127}, size_t{200}, size_t{511}, size_t{590}}) {
        std::vector<std::byte> dst(640, kGuard);
        stream_bytes(dst.data() + dst_offset, src.data() + src_offset, n);
        stream_fence();
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= dst_offset && i < dst_offset + n;
          const std::byte want = inside ? src[src_offset + i - dst_offset] : kGuard;
          ASSERT_EQ(dst[i], want) << "dst offset " << dst_offset << ", src offset " << src_offset
                                  << ", n " << n << ", byte " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace chute
