#include "chute/util/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chute/codec/codec_test_util.h"

namespace chute {
namespace {

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

TEST(Crc32c, KnownAnswers) {
  // RFC 3720 (iSCSI) appendix B.4 test vectors and the classic check value.
  EXPECT_EQ(crc32c(bytes_of("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c(bytes_of("")), 0u);
  std::vector<std::byte> zeros(32, std::byte{0});
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  std::vector<std::byte> ones(32, std::byte{0xFF});
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  std::vector<std::byte> ramp(32);
  for (int i = 0; i < 32; ++i) ramp[i] = static_cast<std::byte>(i);
  EXPECT_EQ(crc32c(ramp), 0x46DD794Eu);
  EXPECT_EQ(crc32c_extend_portable(0, ramp), 0x46DD794Eu);
}

TEST(Crc32c, HardwareAndTablePathsAgreeAtEveryLengthAndAlignment) {
  const auto data = testing::pattern(300, 7);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; n + start <= data.size(); n += 13) {
      auto part = std::span(data).subspan(start, n);
      EXPECT_EQ(crc32c(part), crc32c_extend_portable(0, part)) << start << " " << n;
    }
  }
}

// Inputs of three or more 256-byte and 8 KiB segments take the interleaved three-stream path;
// every length around those boundaries, and a continued CRC, must match the table.
TEST(Crc32c, ThreeStreamPathAgreesWithTheTable) {
  const auto data = testing::pattern(3 * 3 * 8192 + 3 * 256 + 64, 11);
  std::vector<size_t> lengths;
  for (size_t base : {size_t{3 * 256}, size_t{3 * 8192}, size_t{2 * 3 * 8192}}) {
    for (size_t delta = 0; delta < 40; ++delta) {
      lengths.push_back(base - 20 + delta);
      lengths.push_back(base + 3 * 256 + delta);
    }
  }
  lengths.push_back(data.size() - 5);  // the largest start below is 5
  for (size_t start : {size_t{0}, size_t{1}, size_t{5}}) {
    for (size_t n : lengths) {
      auto part = std::span(data).subspan(start, n);
      EXPECT_EQ(crc32c(part), crc32c_extend_portable(0, part)) << start << " " << n;
      EXPECT_EQ(crc32c_extend(0x12345678u, part), crc32c_extend_portable(0x12345678u, part))
          << start << " " << n;
    }
  }
}

TEST(Crc32c, ExtendContinuesACrc) {
  const auto data = testing::pattern(1000, 3);
  const uint32_t whole = crc32c(data);
  for (size_t split : {0, 1, 7, 8, 500, 999, 1000}) {
    auto span = std::span(data);
    EXPECT_EQ(crc32c_extend(crc32c(span.first(split)), span.subspan(split)), whole) << split;
  }
}

}  // namespace
}  // namespace chute
