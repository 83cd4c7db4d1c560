// HDF5's n-bit filter (5). The filter's client data describe the type (written by libhdf5 when
// the dataset was created): [count of values, no-op flag, elements per chunk, class (1: integer
// or float), size, byte order (0 little, 1 big), precision, bit offset]. Each element's
// `precision` significant bits (from bit `offset`) are packed most significant first.
//
// libhdf5's filter restores the bits in place (padding zero) and its type conversion then reads
// them as a value of the dataset's precision; chute has no such conversion, so this codec does
// both for integers: it writes each element as the full-width integer h5py reads (shifted down
// by the offset and sign-extended for signed types), in the dataset's byte order. Floats of
// reduced precision (custom exponent and mantissa fields) are refused.

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/codec/hdf5_bits.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class NbitCodec final : public BytesToBytesCodec {
 public:
  NbitCodec(bool pass_through, uint64_t elements, unsigned size, bool big_endian,
            unsigned precision, unsigned offset, bool is_signed)
      : pass_through_(pass_through),
        elements_(elements),
        size_(size),
        big_endian_(big_endian),
        precision_(precision),
        offset_(offset),
        signed_(is_signed) {}

  void decode_exact(std::span<const std::byte> in, std::span<std::byte> out,
                    CodecScratch&) const override {
    if (pass_through_) {
      if (in.size() != out.size()) fail_size("nbit", out.size(), in.size());
      std::memcpy(out.data(), in.data(), in.size());
      return;
    }
    if (elements_ * size_ != out.size()) {
      fail(ErrorCode::kCorruptData,
           "nbit: the filter describes {} elements of {} bytes, not {} bytes", elements_, size_,
           out.size());
    }
    Hdf5BitReader bits(in, "nbit");
    const uint64_t sign = uint64_t{1} << (precision_ - 1);
    for (uint64_t i = 0; i < elements_; ++i) {
      uint64_t v = bits.read(precision_);
      if (signed_ && precision_ < 64 && (v & sign)) v |= ~uint64_t{0} << precision_;
      hdf5_store_value(out.data() + i * size_, v, size_, big_endian_);
    }
  }

  void decode_any(std::span<const std::byte> in, ByteBuffer& out, size_t limit,
                  CodecScratch& scratch) const override {
    const uint64_t total = pass_through_ ? in.size() : elements_ * size_;
    if (total > limit) {
      fail(ErrorCode::kCorruptData, "nbit: {} decoded bytes, more than the {} allowed", total,
           limit);
    }
    out.resize_for_overwrite(static_cast<size_t>(total));
    decode_exact(in, out.span(), scratch);
  }

  void encode(std::span<const std::byte> in, ByteBuffer& out, CodecScratch&) const override {
    if (!pass_through_) {
      fail(ErrorCode::kUnsupported, "nbit: chute decodes the n-bit filter but does not encode it");
    }
    out.resize_for_overwrite(in.size());
    std::memcpy(out.data(), in.data(), in.size());
  }

  std::optional<int64_t> fixed_encoded_nbytes(int64_t decoded_nbytes) const override {
    if (pass_through_) return decoded_nbytes;
    return std::nullopt;
  }

  std::string describe() const override {
    return pass_through_ ? "nbit(full precision)"
                         : fmt::format("nbit({} bits at bit {})", precision_, offset_);
  }

 private:
  bool pass_through_;
  uint64_t elements_;
  unsigned size_;
  bool big_endian_;
  unsigned precision_;
  unsigned offset_;
  bool signed_;
};

}  // namespace

std::unique_ptr<BytesToBytesCodec> make_nbit_codec(const nlohmann::json& config) {
  const nlohmann::json* cd = config.contains("cd") ? &config["cd"] : nullptr;
  if (cd == nullptr || !cd->is_array() || cd->size() < 3) {
    fail(ErrorCode::kInvalidMetadata, "nbit: expected the filter's client data (3 or more values)");
  }
  std::vector<uint64_t> v;
  for (const auto& x : *cd) {
    if (!x.is_number_unsigned()) {
      fail(ErrorCode::kInvalidMetadata, "nbit: client data must be unsigned integers");
    }
    v.push_back(x.get<uint64_t>());
  }
  if (v[1] != 0) return std::make_unique<NbitCodec>(true, 0, 1, false, 8, 0, false);
  if (v.size() < 5 || v[0] != v.size()) {
    fail(ErrorCode::kInvalidMetadata, "nbit: {} client data values, the first says {}", v.size(),
         v[0]);
  }
  if (v[3] != 1) {
    fail(ErrorCode::kUnsupported,
         "nbit: packed array and compound types are not supported (type class code {})", v[3]);
  }
  if (v.size() < 8) {
    fail(ErrorCode::kInvalidMetadata, "nbit: {} client data values, expected 8", v.size());
  }
  const uint64_t size = v[4], order = v[5], precision = v[6], offset = v[7];
  if ((size != 1 && size != 2 && size != 4 && size != 8) || order > 1 || precision == 0 ||
      precision + offset > size * 8) {
    fail(ErrorCode::kInvalidMetadata, "nbit: bad type (size {}, order {}, precision {}, offset {})",
         size, order, precision, offset);
  }
  const auto kind_field = config.find("kind");
  const std::string kind = kind_field == config.end() || !kind_field->is_string()
                               ? (kind_field == config.end() ? "uint" : "?")
                               : kind_field->get<std::string>();
  if (kind != "int" && kind != "uint" && kind != "float") {
    fail(ErrorCode::kInvalidMetadata, "nbit: 'kind' must be \"int\", \"uint\" or \"float\", got {}",
         kind_field->dump());
  }
  if (kind == "float") {
    fail(ErrorCode::kUnsupported,
         "nbit: floating-point values of reduced precision ({} of {} bits at bit {}) are not "
         "supported",
         precision, size * 8, offset);
  }
  if (v[2] == 0 || v[2] > (uint64_t{1} << 40)) {
    fail(ErrorCode::kInvalidMetadata, "nbit: {} elements per chunk", v[2]);
  }
  return std::make_unique<NbitCodec>(false, v[2], static_cast<unsigned>(size), order == 1,
                                     static_cast<unsigned>(precision),
                                     static_cast<unsigned>(offset), kind == "int");
}

}  // namespace chute
