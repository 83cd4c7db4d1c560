#include "chute/util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace chute {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli polynomial

/// Slicing-by-8 tables: kTables[k][b] is the CRC of byte b followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPolynomial : c >> 1;
    t[0][b] = c;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  }
  return t;
}

constexpr auto kTables = make_tables();

uint32_t extend_table(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;  // little-endian hosts only (as the rest of chute)
    crc = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
          kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
          kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ kTables[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
// The crc32 instruction takes 3 cycles and can start every cycle, so one dependent chain runs
// at a third of the core's rate. Long inputs are cut into three equal segments whose CRCs run
// interleaved, then joined: the raw register update is linear, so
// crc(c, A B C) = shift(shift(crc(c, A)) ^ crc(0, B)) ^ crc(0, C), where shift appends
// |B| = |C| zero bytes. (Mark Adler's crc32c.c does the same.)
constexpr size_t kLongSegment = 8192;
constexpr size_t kShortSegment = 256;

/// Appending `n` zero bytes to a raw CRC register, as four byte tables of a 32 x 32 bit matrix.
struct ZeroShift {
  std::array<std::array<uint32_t, 256>, 4> table{};

  uint32_t operator()(uint32_t crc) const {
    return table[0][crc & 0xFF] ^ table[1][(crc >> 8) & 0xFF] ^ table[2][(crc >> 16) & 0xFF] ^
           table[3][crc >> 24];
  }
};

__attribute__((target("sse4.2"))) ZeroShift make_zero_shift(size_t n) {
  std::array<uint32_t, 32> image{};  // where each single bit of the register goes
  for (int bit = 0; bit < 32; ++bit) {
    uint64_t c = uint32_t{1} << bit;
    for (size_t i = 0; i < n / 8; ++i) c = _mm_crc32_u64(c, 0);
    image[bit] = static_cast<uint32_t>(c);
  }
  ZeroShift shift;
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t v = 0;
      for (int j = 0; j < 8; ++j) {
        if ((b >> j) & 1) v ^= image[8 * k + j];
      }
      shift.table[k][b] = v;
    }
  }
  return shift;
}

__attribute__((target("sse4.2"))) inline uint64_t load_u64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

/// Consumes whole groups of three `segment`-byte segments of `p`.
__attribute__((target("sse4.2"))) uint32_t extend_three_way(uint32_t crc, const uint8_t*& p,
                                                            size_t& n, size_t segment,
                                                            const ZeroShift& shift) {
  uint64_t c0 = crc;
  while (n >= 3 * segment) {
    uint64_t c1 = 0;
    uint64_t c2 = 0;
    for (size_t i = 0; i < segment; i += 8) {
      c0 = _mm_crc32_u64(c0, load_u64(p + i));
      c1 = _mm_crc32_u64(c1, load_u64(p + segment + i));
      c2 = _mm_crc32_u64(c2, load_u64(p + 2 * segment + i));
    }
    c0 = shift(shift(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1)) ^
         static_cast<uint32_t>(c2);
    p += 3 * segment;
    n -= 3 * segment;
  }
  return static_cast<uint32_t>(c0);
}

__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  static const ZeroShift long_shift = make_zero_shift(kLongSegment);
  static const ZeroShift short_shift = make_zero_shift(kShortSegment);
  crc = extend_three_way(crc, p, n, kLongSegment, long_shift);
  crc = extend_three_way(crc, p, n, kShortSegment, short_shift);
  uint64_t c = crc;
  while (n >= 8) {
    c = _mm_crc32_u64(c, load_u64(p));
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

bool have_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c_extend_portable(uint32_t crc, std::span<const std::byte> data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  return ~extend_table(~crc, p, data.size());
}

uint32_t crc32c_extend(uint32_t crc, std::span<const std::byte> data) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
#if defined(__x86_64__)
  if (have_sse42()) return ~extend_sse42(~crc, p, data.size());
#endif
  return ~extend_table(~crc, p, data.size());
}

uint32_t crc32c(std::span<const std::byte> data) { return crc32c_extend(0, data); }

}  // namespace chute
