#include "chute/format/hdf5_native/bytes.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "chute/format/hdf5_native/messages.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace chute::h5native {
namespace {

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

TEST(Hdf5NativeBytes, Lookup3KnownValues) {
  // Bob Jenkins' published hashlittle() test values.
  EXPECT_EQ(lookup3({}, 0), 0xdeadbeefu);
  EXPECT_EQ(lookup3(as_bytes("Four score and seven years ago"), 0), 0x17770551u);
  EXPECT_EQ(lookup3(as_bytes("Four score and seven years ago"), 1), 0xcd628161u);
}

TEST(Hdf5NativeBytes, CursorRefusesToReadPastItsEnd) {
  const std::string data = "\x01\x02\x03";
  Cursor in(as_bytes(data), "file.h5: /x: layout message");
  EXPECT_EQ(in.u16(), 0x0201u);
  try {
    in.u16();
    FAIL() << "read past the end";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_NE(std::string(e.what()).find("file.h5: /x: layout message"), std::string::npos);
  }
}

TEST(Hdf5NativeBytes, UndefinedAddressesReadAsUndefined) {
  const std::string data(8, '\xff');
  Cursor in(as_bytes(data), "x", 4, 4);
  EXPECT_EQ(in.offset(), kUndefined);
  EXPECT_EQ(in.length(), kUndefined);
}

TEST(Hdf5NativeBytes, FileReaderChecksEveryRangeAgainstTheFile) {
  auto store = std::make_shared<MemoryStore>();
  store->set("f", std::string(100, 'x'));
  FileReader file(store, "f", "f.h5");
  EXPECT_EQ(file.read(90, 10, "block").size(), 10u);
  EXPECT_THROW(file.read(91, 10, "block"), Error);
  EXPECT_THROW(file.read(kUndefined, 1, "block"), Error);
  EXPECT_THROW(file.read(~uint64_t{0} - 5, 10, "block"), Error);
  file.set_base(50);
  EXPECT_TRUE(file.contains(40, 10));
  EXPECT_FALSE(file.contains(41, 10));
}

TEST(Hdf5NativeMessages, DataspaceWithUnlimitedMaximum) {
  std::string m = "\x02\x02\x01\x01";  // version 2, rank 2, max dims present, simple
  auto put = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) m.push_back(static_cast<char>(v >> (8 * i)));
  };
  put(10);
  put(20);
  put(kUndefined);
  put(20);
  Cursor in(as_bytes(m), "x");
  const Dataspace s = decode_dataspace(in);
  EXPECT_EQ(s.dims, (std::vector<uint64_t>{10, 20}));
  EXPECT_EQ(s.maxdims, (std::vector<uint64_t>{kUndefined, 20}));
  EXPECT_EQ(s.count(), 200u);
}

TEST(Hdf5NativeMessages, DataspaceMaximumBelowCurrentIsCorrupt) {
  std::string m = "\x02\x01\x01\x01";
  for (uint64_t v : {10, 5}) {
    for (int i = 0; i < 8; ++i) m.push_back(static_cast<char>(v >> (8 * i)));
  }
  Cursor in(as_bytes(m), "x");
  EXPECT_THROW(decode_dataspace(in), Error);
}

TEST(Hdf5NativeMessages, BigEndianHalfFloat) {
  // Class 1 version 1, byte order bit set, sign at bit 15, size 2; offset 0, precision 16,
  // exponent at 10 of 5 bits, mantissa at 0 of 10 bits, bias 15.
  const std::string m(
      "\x11\x21\x0f\x00\x02\x00\x00\x00\x00\x00\x10\x00\x0a\x05\x00\x0a\x0f\x00\x00\x00", 20);
  Cursor in(as_bytes(m), "x");
  const Datatype t = decode_datatype(in);
  EXPECT_EQ(t.numpy(), ">f2");
  EXPECT_TRUE(t.is_numeric());
}

}  // namespace
}  // namespace chute::h5native
