#include "chute/format/npy_header.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <string_view>

#include "chute/util/error.h"

namespace chute {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kPreambleV1 = 10;  // magic, 2 version bytes, uint16 length
constexpr size_t kPreambleV2 = 12;  // ... uint32 length

[[noreturn]] void corrupt(const std::string& name, const std::string& what) {
  fail(ErrorCode::kCorruptData, "'{}': not a valid .npy header: {}", name, what);
}

/// A cursor over the header's dict literal.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool consume(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) {
      corrupt(name_, fmt::format("expected '{}' at byte {} of the header dict, found {}", c, pos_,
                                 pos_ < text_.size() ? fmt::format("'{}'", text_[pos_])
                                                     : std::string("its end")));
    }
  }
  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  std::string_view string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      corrupt(name_, fmt::format("expected a quoted string at byte {} of the header dict", pos_));
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) corrupt(name_, "unterminated string in the header dict");
    std::string_view s = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        return value;
      }
    }
    corrupt(name_, "expected True or False for 'fortran_order'");
  }
  int64_t integer() {
    skip_space();
    int64_t value = 0;
    const char* first = text_.data() + pos_;
    const char* last = text_.data() + text_.size();
    auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || value < 0) {
      corrupt(name_, fmt::format("expected a non-negative integer in 'shape' at byte {}", pos_));
    }
    pos_ += static_cast<size_t>(end - first);
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
    return value;
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> values;
    while (!consume(')')) {
      if (values.size() >= 64) corrupt(name_, "a 'shape' of more than 64 dimensions");
      values.push_back(integer());
      if (!consume(',')) {
        expect(')');
        break;
      }
    }
    return values;
  }
  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }

 private:
  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

uint32_t read_le(std::span<const std::byte> bytes, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint32_t>(bytes[at + i]) << (8 * i);
  return v;
}

}  // namespace

int64_t NpyHeader::num_elements() const {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

uint64_t NpyHeader::data_nbytes() const {
  return static_cast<uint64_t>(num_elements()) * data_type.size;
}

uint64_t npy_header_nbytes(std::span<const std::byte> prefix, const std::string& name) {
  if (prefix.size() < kPreambleV1 ||
      std::memcmp(prefix.data(), kMagic.data(), kMagic.size()) != 0) {
    corrupt(name, fmt::format("expected the magic \\x93NUMPY in its first {} bytes (file of {} "
                              "bytes or more)",
                              kPreambleV1, prefix.size()));
  }
  const int major = static_cast<int>(prefix[6]);
  if (major == 1) return kPreambleV1 + read_le(prefix, 8, 2);
  if (major == 2 || major == 3) {
    if (prefix.size() < kPreambleV2) corrupt(name, "the file ends inside its preamble");
    return kPreambleV2 + static_cast<uint64_t>(read_le(prefix, 8, 4));
  }
  fail(ErrorCode::kUnsupported, "'{}': .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", name,
       major, static_cast<int>(prefix[7]));
}

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& name) {
  NpyHeader header;
  header.data_offset = npy_header_nbytes(bytes, name);
  header.major_version = static_cast<int>(bytes[6]);
  if (header.data_offset > bytes.size()) {
    corrupt(name, fmt::format("expected a header of {} bytes, the file holds {}",
                              header.data_offset, bytes.size()));
  }
  const size_t preamble = header.major_version == 1 ? kPreambleV1 : kPreambleV2;
  std::string_view text(reinterpret_cast<const char*>(bytes.data()) + preamble,
                        static_cast<size_t>(header.data_offset) - preamble);
  DictParser dict(text, name);
  bool has_descr = false, has_order = false, has_shape = false;
  dict.expect('{');
  while (!dict.consume('}')) {
    const std::string_view key = dict.string();
    dict.expect(':');
    if (key == "descr") {
      if (dict.peek() == '[') {
        fail(ErrorCode::kUnsupported, "'{}': structured dtypes are not supported", name);
      }
      const std::string_view descr = dict.string();
      try {
        header.data_type = parse_v2_data_type(descr, &header.endian);
      } catch (const Error& e) {
        throw e.with_context(fmt::format("'{}'", name));
      }
      has_descr = true;
    } else if (key == "fortran_order") {
      header.fortran_order = dict.boolean();
      has_order = true;
    } else if (key == "shape") {
      header.shape = dict.tuple();
      has_shape = true;
    } else {
      corrupt(name, fmt::format("unexpected key '{}' (expected descr, fortran_order, shape)", key));
    }
    if (!dict.consume(',')) {
      dict.expect('}');
      break;
    }
  }
  if (!dict.at_end()) corrupt(name, "unexpected text after the header dict");
  if (!has_descr || !has_order || !has_shape) {
    corrupt(name, "expected the keys descr, fortran_order and shape");
  }
  // Guard the element count and byte size against overflow before anything uses them.
  uint64_t elements = 1;
  for (int64_t extent : header.shape) {
    if (extent != 0 && elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                                      static_cast<uint64_t>(extent) / 16) {
      corrupt(name, "its shape holds more elements than a file can");
    }
    elements *= static_cast<uint64_t>(extent);
  }
  return header;
}

}  // namespace chute
