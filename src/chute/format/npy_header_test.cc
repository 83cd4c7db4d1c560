#include "chute/format/npy_header.h"

#include <cstdio>
#include <fstream>
#include <numeric>

#include "chute/format/npy.h"
#include "chute/format/test_util.h"

namespace chute {
namespace {

using testing::expect_error;

/// An .npy preamble + dict for `dict`, padded with spaces to a multiple of 64 as NumPy does.
std::vector<std::byte> npy_bytes(const std::string& dict, int major = 1) {
  const size_t preamble = major == 1 ? 10 : 12;
  std::string text = dict;
  while ((preamble + text.size() + 1) % 64 != 0) text += ' ';
  text += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t n = text.size();
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += text;
  std::vector<std::byte> bytes(out.size());
  std::memcpy(bytes.data(), out.data(), out.size());
  return bytes;
}

TEST(NpyHeader, ParsesVersion1) {
  auto bytes = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }");
  NpyHeader h = parse_npy_header(bytes, "x.npy");
  EXPECT_EQ(h.data_type, (DataType{DTypeKind::kFloat, 4}));
  EXPECT_EQ(h.endian, Endian::kLittle);
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(h.data_offset, bytes.size());
  EXPECT_EQ(h.data_offset % 64, 0u);
  EXPECT_EQ(h.data_nbytes(), 48u);
}

TEST(NpyHeader, ParsesVersions2And3BigEndianFortranAndScalars) {
  NpyHeader h = parse_npy_header(
      npy_bytes("{'descr': '>c16', 'fortran_order': True, 'shape': (5,), }", 2), "x.npy");
  EXPECT_EQ(h.data_type, (DataType{DTypeKind::kComplex, 16}));
  EXPECT_EQ(h.endian, Endian::kBig);
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(h.major_version, 2);
  h = parse_npy_header(npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", 3),
                       "x.npy");
  EXPECT_EQ(h.data_type, (DataType{DTypeKind::kBool, 1}));
  EXPECT_TRUE(h.shape.empty());
  EXPECT_EQ(h.num_elements(), 1);
  // Keys in any order, double quotes, no trailing comma.
  h = parse_npy_header(npy_bytes(R"({"shape": (2, 0, 7), "fortran_order": False, "descr": "<u2"})"),
                       "x.npy");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 0, 7}));
  EXPECT_EQ(h.data_nbytes(), 0u);
}

TEST(NpyHeader, RejectsBadHeadersNamingTheFile) {
  auto parse = [](std::vector<std::byte> bytes) { parse_npy_header(bytes, "bad.npy"); };
  expect_error([&] { parse(npy_bytes("{'descr': '<f4', 'shape': (3,), }")); },
               ErrorCode::kCorruptData, {"bad.npy", "fortran_order"});
  expect_error([&] { parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,")); },
               ErrorCode::kCorruptData, {"bad.npy"});
  expect_error(
      [&] { parse(npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}")); },
      ErrorCode::kUnsupported, {"bad.npy", "structured"});
  expect_error([&] { parse(npy_bytes("{'descr': '<U4', 'fortran_order': False, 'shape': (3,)}")); },
               ErrorCode::kUnsupported, {"bad.npy", "<U4"});
  expect_error(
      [&] { parse(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}")); },
      ErrorCode::kCorruptData, {"bad.npy", "non-negative"});
  auto truncated = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
  const size_t header_nbytes = truncated.size();
  truncated.resize(40);
  expect_error([&] { parse(truncated); }, ErrorCode::kCorruptData,
               {"bad.npy", fmt::format("a header of {} bytes", header_nbytes)});
  std::vector<std::byte> junk(16, std::byte{'x'});
  expect_error([&] { parse(junk); }, ErrorCode::kCorruptData, {"bad.npy", "magic"});
  auto v9 = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
  v9[6] = std::byte{9};
  expect_error([&] { parse(v9); }, ErrorCode::kUnsupported, {"bad.npy", "version 9"});
  expect_error(
      [&] {
        parse(npy_bytes(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 8), }"));
      },
      ErrorCode::kCorruptData, {"bad.npy", "more elements"});
}

/// Writes an .npy file of `dict` followed by `data`.
std::string write_npy(const std::string& name, const std::string& dict,
                      std::span<const std::byte> data) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  auto header = npy_bytes(dict);
  out.write(reinterpret_cast<const char*>(header.data()),
            static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return path;
}

TEST(NpyOpen, ReadsBoxesInCAndFortranOrderAndBothByteOrders) {
  // A (3, 5, 7) int32 array with value = its C-order index.
  std::vector<int32_t> c(105), f(105), c_be(105);
  std::iota(c.begin(), c.end(), 0);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int k = 0; k < 7; ++k) f[static_cast<size_t>(i + 3 * (j + 5 * k))] = (i * 5 + j) * 7 + k;
    }
  }
  for (size_t i = 0; i < c.size(); ++i)
    c_be[i] = static_cast<int32_t>(__builtin_bswap32(static_cast<uint32_t>(c[i])));
  auto as_bytes = [](const std::vector<int32_t>& v) { return std::as_bytes(std::span(v)); };
  const std::vector<std::string> paths = {
      write_npy("c.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (3, 5, 7), }",
                as_bytes(c)),
      write_npy("f.npy", "{'descr': '<i4', 'fortran_order': True, 'shape': (3, 5, 7), }",
                as_bytes(f)),
      write_npy("be.npy", "{'descr': '>i4', 'fortran_order': False, 'shape': (3, 5, 7), }",
                as_bytes(c_be))};
  for (const std::string& path : paths) {
    ArrayPtr array = open_npy(path);
    EXPECT_EQ(array->metadata().shape, (std::vector<int64_t>{3, 5, 7}));
    std::vector<int32_t> out(2 * 3 * 4, -1);
    array->read(std::vector<int64_t>{1, 2, 3},
                StridedView::contiguous(reinterpret_cast<std::byte*>(out.data()), {2, 3, 4}, 4));
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 4; ++k) {
          EXPECT_EQ(out[static_cast<size_t>((i * 3 + j) * 4 + k)],
                    ((i + 1) * 5 + j + 2) * 7 + k + 3)
              << path;
        }
      }
    }
  }
}

TEST(NpyOpen, TruncatedAndMissingFilesNameTheFile) {
  std::vector<float> data(5);
  const std::string path =
      write_npy("short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                std::as_bytes(std::span(data)));
  expect_error([&] { open_npy(path); }, ErrorCode::kCorruptData, {"short.npy", "truncated"});
  expect_error([&] { open_npy(::testing::TempDir() + "absent.npy"); }, ErrorCode::kNotFound,
               {"absent.npy"});
}

}  // namespace
}  // namespace chute
