#include "chute/format/hdf5_native/bytes.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "chute/util/error.h"

namespace chute::h5native {

namespace {

inline uint32_t rot(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

}  // namespace

uint32_t lookup3(std::span<const std::byte> bytes, uint32_t initval) {
  const auto* k = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t length = bytes.size();
  uint32_t a, b, c;
  a = b = c = 0xdeadbeef + static_cast<uint32_t>(length) + initval;
  auto word = [](const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
  };
  while (length > 12) {
    a += word(k);
    b += word(k + 4);
    c += word(k + 8);
    a -= c, a ^= rot(c, 4), c += b;
    b -= a, b ^= rot(a, 6), a += c;
    c -= b, c ^= rot(b, 8), b += a;
    a -= c, a ^= rot(c, 16), c += b;
    b -= a, b ^= rot(a, 19), a += c;
    c -= b, c ^= rot(b, 4), b += a;
    length -= 12;
    k += 12;
  }
  if (length == 0) return c;
  uint8_t tail[12] = {};
  std::memcpy(tail, k, length);
  a += word(tail);
  b += word(tail + 4);
  c += word(tail + 8);
  c ^= b, c -= rot(b, 14);
  a ^= c, a -= rot(c, 11);
  b ^= a, b -= rot(a, 25);
  c ^= b, c -= rot(b, 16);
  a ^= c, a -= rot(c, 4);
  b ^= a, b -= rot(a, 14);
  c ^= b, c -= rot(b, 24);
  return c;
}

void corrupt(std::string_view where, std::string_view message) {
  fail(ErrorCode::kCorruptData, "{}: {}", where, message);
}

FileReader::FileReader(StorePtr store, std::string key, std::string name)
    : store_(std::move(store)), key_(std::move(key)), name_(std::move(name)) {
  const auto size = store_->size(key_);
  if (!size) fail(ErrorCode::kNotFound, "{}: no such file", name_);
  size_ = *size;
}

void FileReader::set_sizes(int offset_size, int length_size) {
  offset_size_ = offset_size;
  length_size_ = length_size;
}

bool FileReader::contains(uint64_t address, uint64_t n) const {
  if (address == kUndefined || address > size_ || base_ > size_ - address) return false;
  const uint64_t at = base_ + address;
  return n <= size_ - at;
}

uint64_t FileReader::absolute(uint64_t address, uint64_t n, std::string_view what) const {
  if (!contains(address, n)) {
    if (address == kUndefined) corrupt(what, "an undefined address");
    fail(ErrorCode::kCorruptData,
         "{}: {} bytes at byte {} lie outside the file ({} bytes; truncated?)", what, n, address,
         size_);
  }
  return base_ + address;
}

std::shared_ptr<const std::vector<std::byte>> FileReader::page(uint64_t index) const {
  {
    std::lock_guard lock(cache_mutex_);
    const auto it = pages_.find(index);
    if (it != pages_.end()) return it->second;
  }
  const uint64_t begin = index * kPage;
  auto bytes =
      std::make_shared<std::vector<std::byte>>(static_cast<size_t>(std::min(kPage, size_ - begin)));
  if (!store_->read_range(key_, begin, *bytes)) {
    fail(ErrorCode::kNotFound, "{}: the file disappeared", name_);
  }
  std::lock_guard lock(cache_mutex_);
  if (pages_.size() >= kMaxPages) {
    pages_.erase(page_order_.front());
    page_order_.pop_front();
  }
  if (pages_.emplace(index, bytes).second) page_order_.push_back(index);
  return bytes;
}

std::vector<std::byte> FileReader::read(uint64_t address, uint64_t n, std::string_view what) const {
  const uint64_t at = absolute(address, n, what);
  std::vector<std::byte> bytes(static_cast<size_t>(n));
  if (n == 0) return bytes;
  if (n >= 4 * kPage) {
    if (!store_->read_range(key_, at, bytes)) {
      fail(ErrorCode::kNotFound, "{}: the file disappeared", name_);
    }
    return bytes;
  }
  for (uint64_t done = 0; done < n;) {
    const uint64_t pos = at + done;
    const auto p = page(pos / kPage);
    const uint64_t in_page = pos % kPage;
    if (in_page >= p->size()) corrupt(what, "the file is shorter than it was when opened");
    const uint64_t take = std::min<uint64_t>(n - done, p->size() - in_page);
    std::memcpy(bytes.data() + done, p->data() + in_page, static_cast<size_t>(take));
    done += take;
  }
  return bytes;
}

std::vector<std::byte> FileReader::read_upto(uint64_t address, uint64_t n,
                                             std::string_view what) const {
  absolute(address, 1, what);
  return read(address, std::min(n, size_ - base_ - address), what);
}

void Cursor::need(size_t n) const {
  if (n > bytes_.size() - pos_) {
    fail(fmt::format("needs {} bytes at byte {} of its {} (truncated or malformed)", n, pos_,
                     bytes_.size()));
  }
}

void Cursor::seek(size_t pos) {
  if (pos > bytes_.size()) fail(fmt::format("offset {} past its {} bytes", pos, bytes_.size()));
  pos_ = pos;
}

uint64_t Cursor::uint(size_t n) {
  need(n);
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 8; ++i) {
    v |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
  }
  pos_ += n;
  return v;
}

uint64_t Cursor::offset() {
  const auto n = static_cast<size_t>(offset_size_);
  const uint64_t v = uint(n);
  const uint64_t ones = n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
  return v == ones ? kUndefined : v;
}

uint64_t Cursor::length() {
  const auto n = static_cast<size_t>(length_size_);
  const uint64_t v = uint(n);
  const uint64_t ones = n >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * n)) - 1;
  return v == ones ? kUndefined : v;
}

std::span<const std::byte> Cursor::take(size_t n) {
  need(n);
  auto s = bytes_.subspan(pos_, n);
  pos_ += n;
  return s;
}

std::string Cursor::text(size_t n) {
  auto s = take(n);
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

void Cursor::expect(const char* magic) {
  const size_t at = pos_;
  const std::string got = text(4);
  if (got != std::string_view(magic, 4)) {
    fail(fmt::format("expected signature {} at byte {}", magic, at));
  }
}

void Cursor::checksum(size_t begin) {
  if (begin > pos_) fail("checksum range");
  const uint32_t computed = lookup3(bytes_.subspan(begin, pos_ - begin));
  const auto stored = static_cast<uint32_t>(u32());
  if (computed != stored) {
    fail(fmt::format("checksum mismatch (stored {:08x}, computed {:08x})", stored, computed));
  }
}

void Cursor::fail(std::string_view message) const { corrupt(where_, message); }

int log2_floor(uint64_t v) { return v == 0 ? 0 : 63 - std::countl_zero(v); }

int limit_enc_size(uint64_t v) { return log2_floor(v) / 8 + 1; }

}  // namespace chute::h5native
