// CodecChain::create (names -> codecs, layouts tracked through array->array codecs) and the chain
// that runs the codecs for every chunk, ping-ponging between two scratch buffers and decoding the
// last stage straight into the caller's memory.

#include "chute/codec/codec_chain.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "chute/codec/codec.h"
#include "chute/codec/sharding.h"
#include "chute/util/checked.h"
#include "chute/util/error.h"

namespace chute {
namespace {

enum class Kind { kArrayToArray, kArrayToBytes, kBytesToBytes, kShuffle };

struct NamedSpec {
  std::string name;  // without a "numcodecs." prefix
  const nlohmann::json* config;
};

Kind kind_of(const std::string& name) {
  if (name == "transpose" || name == "delta" || name == "fixedscaleoffset" || name == "astype" ||
      name == "quantize") {
    return Kind::kArrayToArray;
  }
  if (name == "bytes" || name == "sharding_indexed") return Kind::kArrayToBytes;
  if (name == "blosc" || name == "zstd" || name == "gzip" || name == "zlib" || name == "lz4" ||
      name == "crc32c" || name == "fletcher32" || name == "hdf5_lz4" || name == "bzip2" ||
      name == "lzf" || name == "szip" || name == "bitshuffle" || name == "nbit" ||
      name == "scaleoffset") {
    return Kind::kBytesToBytes;
  }
  if (name == "shuffle") return Kind::kShuffle;
  fail(ErrorCode::kUnsupported, "unsupported codec '{}'", name);
}

/// A byte shuffle is a bytes->bytes codec, but v2 filters (mapped before the bytes codec) may
/// hold one, and other bytes->bytes codecs too (kerchunk's references to HDF5 files write zlib
/// as a filter). Those that only other such codecs separate from the array->bytes codec move
/// just after it (the same bytes, as the bytes codec then writes the stored byte order); a
/// shuffle followed by an array->array codec stays an array->array codec on the native bytes.
std::vector<NamedSpec> place_shuffles(std::vector<NamedSpec> specs) {
  size_t a2b = specs.size();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (kind_of(specs[i].name) == Kind::kArrayToBytes) {
      a2b = i;
      break;
    }
  }
  if (a2b == specs.size()) return specs;
  size_t first_moved = a2b;
  while (first_moved > 0 && (specs[first_moved - 1].name == "shuffle" ||
                             kind_of(specs[first_moved - 1].name) == Kind::kBytesToBytes)) {
    --first_moved;
  }
  std::vector<NamedSpec> out(specs.begin(), specs.begin() + first_moved);
  out.push_back(specs[a2b]);
  out.insert(out.end(), specs.begin() + first_moved, specs.begin() + a2b);
  out.insert(out.end(), specs.begin() + a2b + 1, specs.end());
  return out;
}

class ChainImpl final : public CodecChain {
 public:
  std::vector<std::unique_ptr<ArrayToArrayCodec>> a2a;
  std::vector<ChunkLayout> layouts;  // layouts[i] is a2a[i]'s decoded layout; back() feeds a2b
  std::unique_ptr<ArrayToBytesCodec> a2b;
  std::vector<std::unique_ptr<BytesToBytesCodec>> b2b;
  std::vector<std::optional<int64_t>> b2b_decoded_nbytes;  // known decoded size of b2b[i]
  int64_t nbytes = 0;
  std::optional<int64_t> encoded_nbytes;  // when fixed
  size_t decode_limit = 0;                // bound for intermediate streams of unknown size

  void decode(std::span<const std::byte> encoded, std::span<std::byte> out,
              CodecScratch& scratch) const override {
    if (static_cast<int64_t>(out.size()) != nbytes) {
      fail(ErrorCode::kInternal, "codec chain: output holds {} bytes, expected {}", out.size(),
           nbytes);
    }
    const bool bytes_land_in_out = a2a.empty() && a2b->is_identity();
    size_t next = kStageA;
    auto take_buffer = [&]() -> ByteBuffer& {
      ByteBuffer& b = scratch.buffer(next);
      next = next == kStageA ? kStageB : kStageA;
      return b;
    };
    std::span<const std::byte> cur = encoded;
    for (size_t i = b2b.size(); i-- > 0;) {
      if (i == 0 && bytes_land_in_out) {
        b2b[0]->decode_exact(cur, out, scratch);
        return;
      }
      ByteBuffer& buf = take_buffer();
      if (b2b_decoded_nbytes[i]) {
        buf.resize_for_overwrite(static_cast<size_t>(*b2b_decoded_nbytes[i]));
        b2b[i]->decode_exact(cur, buf.span(), scratch);
      } else {
        b2b[i]->decode_any(cur, buf, decode_limit, scratch);
      }
      cur = buf.span();
    }
    if (a2a.empty()) {
      a2b->decode(cur, out, scratch);
      return;
    }
    ByteBuffer& arr = take_buffer();
    arr.resize_for_overwrite(static_cast<size_t>(layouts.back().nbytes()));
    a2b->decode(cur, arr.span(), scratch);
    cur = arr.span();
    for (size_t j = a2a.size(); j-- > 0;) {
      if (j == 0) {
        a2a[0]->decode(cur, out);
        return;
      }
      ByteBuffer& buf = take_buffer();
      buf.resize_for_overwrite(static_cast<size_t>(layouts[j].nbytes()));
      a2a[j]->decode(cur, buf.span());
      cur = buf.span();
    }
  }

  bool decode_part(std::span<const std::byte> encoded, size_t begin, size_t end,
                   std::span<std::byte> out, CodecScratch& scratch) const override {
    check_part(begin, end, out.size());
    const bool whole_out = static_cast<int64_t>(out.size()) == nbytes;
    if (stored_as_is() && whole_out && static_cast<int64_t>(encoded.size()) == nbytes) {
      std::copy(encoded.begin() + static_cast<std::ptrdiff_t>(begin),
                encoded.begin() + static_cast<std::ptrdiff_t>(end),
                out.begin() + static_cast<std::ptrdiff_t>(begin));
      return true;
    }
    if (compressed_as_is() && whole_out && b2b[0]->decode_part(encoded, begin, end, out, scratch)) {
      return true;
    }
    decode(encoded, out, scratch);
    return false;
  }

  /// The stored stream is the chunk's bytes (C order, native byte order) with no compressor:
  /// a part is a byte range of it.
  bool stored_as_is() const override { return a2a.empty() && a2b->is_identity() && b2b.empty(); }
  /// The chunk's bytes behind one codec that can decode part of them (blosc).
  bool compressed_as_is() const {
    return a2a.empty() && a2b->is_identity() && b2b.size() == 1 && b2b[0]->decodes_parts();
  }
  bool decodes_parts() const override { return stored_as_is() || compressed_as_is(); }

  size_t part_alignment(std::span<const std::byte> encoded) const override {
    return compressed_as_is() ? b2b[0]->part_alignment(encoded) : 0;
  }

  bool read_part(const StreamReader& read, size_t stored_nbytes, size_t begin, size_t end,
                 ByteBuffer& stream, std::span<std::byte> out,
                 CodecScratch& scratch) const override {
    check_part(begin, end, out.size());
    if (stored_as_is() && static_cast<int64_t>(stored_nbytes) == nbytes) {
      if (end > begin) read(begin, out.subspan(begin, end - begin));
      return true;
    }
    if (compressed_as_is() && static_cast<int64_t>(out.size()) == nbytes &&
        b2b[0]->read_part(read, stored_nbytes, begin, end, stream, out, scratch)) {
      return true;
    }
    // The whole stored chunk, decoded whole: that also reports what is wrong with it.
    stream.resize_for_overwrite(stored_nbytes);
    read(0, stream.span());
    decode(stream.span(), out, scratch);
    return false;
  }

  static void check_part(size_t begin, size_t end, size_t out_nbytes) {
    if (begin > end || end > out_nbytes) {
      fail(ErrorCode::kInternal, "codec chain: part [{}, {}) of a {}-byte chunk", begin, end,
           out_nbytes);
    }
  }

  void encode(std::span<const std::byte> decoded, ByteBuffer& out,
              CodecScratch& scratch) const override {
    if (static_cast<int64_t>(decoded.size()) != nbytes) {
      fail(ErrorCode::kInvalidArgument, "codec chain: encode expected {} bytes, got {}", nbytes,
           decoded.size());
    }
    size_t next = kStageA;
    auto take_buffer = [&]() -> ByteBuffer& {
      ByteBuffer& b = scratch.buffer(next);
      next = next == kStageA ? kStageB : kStageA;
      return b;
    };
    std::span<const std::byte> cur = decoded;
    for (size_t j = 0; j < a2a.size(); ++j) {
      ByteBuffer& buf = take_buffer();
      buf.resize(static_cast<size_t>(a2a[j]->encoded_layout().nbytes()));
      a2a[j]->encode(cur, buf.span());
      cur = buf.span();
    }
    ByteBuffer& bytes = b2b.empty() ? out : take_buffer();
    a2b->encode(cur, bytes, scratch);
    cur = bytes.span();
    for (size_t i = 0; i < b2b.size(); ++i) {
      ByteBuffer& buf = i + 1 == b2b.size() ? out : take_buffer();
      b2b[i]->encode(cur, buf, scratch);
      cur = buf.span();
    }
  }

  int64_t decoded_nbytes() const override { return nbytes; }

  const ShardingCodec* sharding() const override {
    return a2a.empty() && b2b.empty() ? a2b->sharding() : nullptr;
  }

  std::string describe() const override {
    std::string s;
    auto add = [&](const std::string& part) {
      if (!s.empty()) s += " | ";
      s += part;
    };
    for (const auto& c : a2a) add(c->describe());
    add(a2b->describe());
    for (const auto& c : b2b) add(c->describe());
    return s;
  }
};

std::unique_ptr<BytesToBytesCodec> make_bytes_to_bytes(const NamedSpec& spec, int element_size) {
  const nlohmann::json& config = *spec.config;
  if (spec.name == "blosc") return make_blosc_codec(config, element_size);
  if (spec.name == "zstd") return make_zstd_codec(config);
  if (spec.name == "gzip") return make_gzip_codec(config, /*gzip=*/true);
  if (spec.name == "zlib") return make_gzip_codec(config, /*gzip=*/false);
  if (spec.name == "lz4") return make_lz4_codec(config);
  if (spec.name == "crc32c") return make_crc32c_codec(config);
  if (spec.name == "fletcher32") return make_fletcher32_codec(config);
  if (spec.name == "hdf5_lz4") return make_hdf5_lz4_codec(config);
  if (spec.name == "shuffle") return make_shuffle_codec(config, element_size);
  if (spec.name == "bzip2") return make_bzip2_codec(config);
  if (spec.name == "lzf") return make_lzf_codec(config);
  if (spec.name == "szip") return make_szip_codec(config);
  if (spec.name == "bitshuffle") return make_bitshuffle_codec(config, element_size);
  if (spec.name == "nbit") return make_nbit_codec(config);
  if (spec.name == "scaleoffset") return make_scaleoffset_codec(config);
  fail(ErrorCode::kInvalidMetadata, "codec '{}' is not a bytes->bytes codec", spec.name);
}

}  // namespace

std::optional<int64_t> fixed_encoded_nbytes(const CodecChain& chain) {
  const auto* impl = dynamic_cast<const ChainImpl*>(&chain);
  return impl ? impl->encoded_nbytes : std::nullopt;
}

std::shared_ptr<const CodecChain> CodecChain::create(std::span<const CodecSpec> codecs,
                                                     const DataType& data_type,
                                                     std::span<const int64_t> chunk_shape) {
  return create(codecs, data_type, chunk_shape, {});
}

std::shared_ptr<const CodecChain> CodecChain::create(std::span<const CodecSpec> codecs,
                                                     const DataType& data_type,
                                                     std::span<const int64_t> chunk_shape,
                                                     std::span<const std::byte> fill_value) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  std::vector<NamedSpec> specs;
  for (const CodecSpec& c : codecs) {
    std::string_view name = c.name;
    if (name.starts_with("numcodecs.")) name.remove_prefix(10);
    const nlohmann::json* config = c.configuration.is_null() ? &kEmpty : &c.configuration;
    if (!config->is_object()) {
      fail(ErrorCode::kInvalidMetadata, "codec '{}': configuration must be an object, got {}",
           c.name, config->dump());
    }
    specs.push_back({std::string(name), config});
    kind_of(specs.back().name);  // throws kUnsupported for unknown names
  }
  specs = place_shuffles(std::move(specs));
  for (int64_t extent : chunk_shape) {
    if (extent < 0) fail(ErrorCode::kInvalidMetadata, "negative chunk extent {}", extent);
  }

  auto chain = std::make_shared<ChainImpl>();
  if (!checked_product(chunk_shape, std::max<int64_t>(static_cast<int64_t>(data_type.size), 1))) {
    fail(ErrorCode::kInvalidMetadata, "a chunk of [{}] elements of {} bytes exceeds 2^63 bytes",
         fmt::join(chunk_shape, ", "), data_type.size);
  }
  ChunkLayout layout{data_type, {chunk_shape.begin(), chunk_shape.end()}};
  chain->nbytes = layout.nbytes();
  size_t i = 0;
  for (; i < specs.size() && kind_of(specs[i].name) != Kind::kArrayToBytes; ++i) {
    const NamedSpec& spec = specs[i];
    if (kind_of(spec.name) == Kind::kBytesToBytes) {
      fail(ErrorCode::kInvalidMetadata,
           "codec '{}' (bytes->bytes) comes before the array->bytes codec", spec.name);
    }
    chain->layouts.push_back(layout);
    if (spec.name == "transpose") {
      chain->a2a.push_back(make_transpose_codec(*spec.config, layout));
    } else {
      chain->a2a.push_back(make_numcodecs_filter(spec.name, *spec.config, layout));
    }
    layout = chain->a2a.back()->encoded_layout();
  }
  chain->layouts.push_back(layout);
  if (i == specs.size()) {
    fail(ErrorCode::kInvalidMetadata,
         "codec chain has no array->bytes codec (expected one 'bytes' or 'sharding_indexed')");
  }
  if (specs[i].name == "bytes") {
    chain->a2b = make_bytes_codec(*specs[i].config, layout);
  } else {
    // Empty inner chunks are filled with the array's fill value in the layout the sharding
    // codec sees; a value-changing filter before it would need that fill value re-encoded.
    for (size_t k = 0; k < i; ++k) {
      if (specs[k].name != "transpose") {
        fail(ErrorCode::kUnsupported,
             "codec '{}' before 'sharding_indexed' is not supported (only 'transpose' is)",
             specs[k].name);
      }
    }
    chain->a2b = make_sharding_codec(*specs[i].config, layout, fill_value);
  }
  std::optional<int64_t> size = chain->a2b->fixed_encoded_nbytes();
  for (++i; i < specs.size(); ++i) {
    if (kind_of(specs[i].name) == Kind::kArrayToBytes) {
      fail(ErrorCode::kInvalidMetadata, "codec chain has a second array->bytes codec '{}'",
           specs[i].name);
    }
    if (kind_of(specs[i].name) == Kind::kArrayToArray) {
      fail(ErrorCode::kInvalidMetadata,
           "codec '{}' (array->array) comes after the array->bytes codec", specs[i].name);
    }
    chain->b2b.push_back(make_bytes_to_bytes(specs[i], layout.dtype.size));
    chain->b2b_decoded_nbytes.push_back(size);
    size = size ? chain->b2b.back()->fixed_encoded_nbytes(*size) : std::nullopt;
  }
  chain->encoded_nbytes = size;
  chain->decode_limit = static_cast<size_t>(2 * layout.nbytes() + (1 << 20));
  return chain;
}

}  // namespace chute
