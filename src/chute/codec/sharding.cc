// sharding_indexed: the shard index (decode + validation) and the codec that decodes or encodes
// whole shards. The array layer normally reads inner chunks itself (decode_index, then
// inner->decode on each chunk's bytes); the whole-shard path serves chains with codecs around the
// sharding codec, `chute make-dataset` and tests.

#include "chute/codec/sharding.h"

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {

static_assert(sizeof(ShardIndexEntry) == 16, "the index is decoded straight into entries");

int64_t ShardingCodec::inner_chunk_count() const {
  int64_t n = 1;
  for (int64_t c : chunks_per_shard) n *= c;
  return n;
}

int64_t ShardingCodec::inner_position(std::span<const int64_t> inner_coords_in_shard) const {
  int64_t position = 0;
  for (size_t d = 0; d < chunks_per_shard.size(); ++d) {
    position = position * chunks_per_shard[d] + inner_coords_in_shard[d];
  }
  return position;
}

void ShardingCodec::decode_index(std::span<const std::byte> encoded, uint64_t shard_nbytes,
                                 std::vector<ShardIndexEntry>& out, CodecScratch& scratch) const {
  const uint64_t index_nbytes = index_encoded_nbytes();
  if (encoded.size() != index_nbytes || shard_nbytes < index_nbytes) {
    fail(ErrorCode::kCorruptData,
         "sharding_indexed: shard index truncated: expected {} bytes, got {} (shard of {} bytes)",
         index_nbytes, std::min<uint64_t>(encoded.size(), shard_nbytes), shard_nbytes);
  }
  out.resize(static_cast<size_t>(inner_chunk_count()));
  index_codecs->decode(encoded, std::as_writable_bytes(std::span(out)), scratch);
  const uint64_t index_begin = index_offset(shard_nbytes);
  const uint64_t index_end = index_begin + index_nbytes;
  for (size_t i = 0; i < out.size(); ++i) {
    const ShardIndexEntry& e = out[i];
    if (e.is_empty()) continue;
    if (e.offset > shard_nbytes || e.nbytes > shard_nbytes - e.offset) {
      fail(ErrorCode::kCorruptData,
           "sharding_indexed: inner chunk {} at offset {} with {} bytes lies past the end of the "
           "shard ({} bytes)",
           i, e.offset, e.nbytes, shard_nbytes);
    }
    if (e.nbytes > 0 && e.offset < index_end && e.offset + e.nbytes > index_begin) {
      fail(ErrorCode::kCorruptData,
           "sharding_indexed: inner chunk {} at offset {} with {} bytes overlaps the index at "
           "[{}, {})",
           i, e.offset, e.nbytes, index_begin, index_end);
    }
  }
}

namespace {

/// Visits the inner chunk regions of a C-order shard: for each run of `row_bytes` contiguous
/// bytes of inner chunk `position`, calls f(shard_byte_offset, tile_byte_offset).
template <typename F>
void for_each_row(const ShardingCodec& s, int64_t position, size_t element_size, F&& f) {
  const size_t rank = s.shard_shape.size();
  if (rank == 0) return f(size_t{0}, size_t{0});
  std::vector<int64_t> chunk(rank);
  for (size_t d = rank, p = static_cast<size_t>(position); d-- > 0;) {
    chunk[d] = static_cast<int64_t>(p % s.chunks_per_shard[d]);
    p /= s.chunks_per_shard[d];
  }
  // Strides of the shard in elements.
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) stride[d] = stride[d + 1] * s.shard_shape[d + 1];
  int64_t origin = 0;
  for (size_t d = 0; d < rank; ++d) origin += chunk[d] * s.inner_chunk_shape[d] * stride[d];
  const int64_t rows = [&] {
    int64_t n = 1;
    for (size_t d = 0; d + 1 < rank; ++d) n *= s.inner_chunk_shape[d];
    return n;
  }();
  const int64_t row_elements = s.inner_chunk_shape[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = origin;
    for (size_t d = 0; d + 1 < rank; ++d) offset += index[d] * stride[d];
    f(static_cast<size_t>(offset) * element_size,
      static_cast<size_t>(r * row_elements) * element_size);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < s.inner_chunk_shape[d]) break;
      index[d] = 0;
    }
  }
}

class ShardingArrayToBytes final : public ArrayToBytesCodec {
 public:
  ShardingArrayToBytes(ShardingCodec codec, size_t element_size)
      : codec_(std::move(codec)), element_size_(element_size) {
    inner_nbytes_ = static_cast<size_t>(codec_.inner->decoded_nbytes());
    bool contiguous = true;
    for (size_t d = 1; d < codec_.shard_shape.size(); ++d) {
      contiguous = contiguous && codec_.chunks_per_shard[d] == 1;
    }
    contiguous_ = contiguous;
    row_bytes_ = codec_.inner_chunk_shape.empty()
                     ? element_size
                     : static_cast<size_t>(codec_.inner_chunk_shape.back()) * element_size;
  }

  void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded,
              CodecScratch& scratch) const override {
    CodecScratch& nested = scratch.contexts().nested();
    const uint64_t index_nbytes = codec_.index_encoded_nbytes();
    if (encoded.size() < index_nbytes) {
      fail(ErrorCode::kCorruptData,
           "sharding_indexed: shard index truncated: expected {} bytes, got a shard of {} bytes",
           index_nbytes, encoded.size());
    }
    std::vector<ShardIndexEntry>& index = scratch.contexts().shard_index;
    codec_.decode_index(encoded.subspan(codec_.index_offset(encoded.size()), index_nbytes),
                        encoded.size(), index, nested);
    ByteBuffer& tile = nested.buffer(kCaller);
    tile.resize(inner_nbytes_);
    for (size_t p = 0; p < index.size(); ++p) {
      const ShardIndexEntry& e = index[p];
      std::span<std::byte> target =
          contiguous_ ? decoded.subspan(p * inner_nbytes_, inner_nbytes_) : tile.span();
      if (e.is_empty()) {
        fill(target);
      } else {
        try {
          codec_.inner->decode(encoded.subspan(e.offset, e.nbytes), target, nested);
        } catch (const Error& error) {
          throw error.with_context(fmt::format("inner chunk {} of the shard", p));
        }
      }
      if (contiguous_) continue;
      for_each_row(codec_, static_cast<int64_t>(p), element_size_, [&](size_t at, size_t from) {
        std::memcpy(decoded.data() + at, tile.data() + from, row_bytes_);
      });
    }
  }

  void encode(std::span<const std::byte> decoded, ByteBuffer& out,
              CodecScratch& scratch) const override {
    CodecScratch& nested = scratch.contexts().nested();
    std::vector<ShardIndexEntry> index(static_cast<size_t>(codec_.inner_chunk_count()));
    ByteBuffer data;
    ByteBuffer tile(inner_nbytes_);
    ByteBuffer chunk;
    for (size_t p = 0; p < index.size(); ++p) {
      for_each_row(codec_, static_cast<int64_t>(p), element_size_, [&](size_t at, size_t from) {
        std::memcpy(tile.data() + from, decoded.data() + at, row_bytes_);
      });
      if (is_fill(tile.span())) continue;
      codec_.inner->encode(tile.span(), chunk, nested);
      index[p] = {data.size(), chunk.size()};
      const size_t at = data.size();
      data.resize(at + chunk.size());
      if (!chunk.empty()) std::memcpy(data.data() + at, chunk.data(), chunk.size());
    }
    const uint64_t index_nbytes = codec_.index_encoded_nbytes();
    if (!codec_.index_at_end) {
      for (ShardIndexEntry& e : index) {
        if (!e.is_empty()) e.offset += index_nbytes;
      }
    }
    ByteBuffer encoded_index;
    codec_.index_codecs->encode(std::as_bytes(std::span(index)), encoded_index, nested);
    out.resize(data.size() + encoded_index.size());
    std::byte* dst = out.data();
    if (!codec_.index_at_end) {
      std::memcpy(dst, encoded_index.data(), encoded_index.size());
      dst += encoded_index.size();
    }
    if (!data.empty()) std::memcpy(dst, data.data(), data.size());
    if (codec_.index_at_end) {
      std::memcpy(dst + data.size(), encoded_index.data(), encoded_index.size());
    }
  }

  const ShardingCodec* sharding() const override { return &codec_; }

  std::string describe() const override {
    return fmt::format("sharding_indexed(chunks {}, [{}], index {} [{}])",
                       fmt::join(codec_.inner_chunk_shape, "x"), codec_.inner->describe(),
                       codec_.index_at_end ? "end" : "start", codec_.index_codecs->describe());
  }

 private:
  void fill(std::span<std::byte> target) const {
    if (codec_.fill_value.empty()) {
      std::memset(target.data(), 0, target.size());
      return;
    }
    for (size_t i = 0; i + element_size_ <= target.size(); i += element_size_) {
      std::memcpy(target.data() + i, codec_.fill_value.data(), element_size_);
    }
  }

  bool is_fill(std::span<const std::byte> tile) const {
    for (size_t i = 0; i < tile.size(); i += element_size_) {
      const std::byte* v = tile.data() + i;
      if (codec_.fill_value.empty()) {
        for (size_t k = 0; k < element_size_; ++k) {
          if (v[k] != std::byte{0}) return false;
        }
      } else if (std::memcmp(v, codec_.fill_value.data(), element_size_) != 0) {
        return false;
      }
    }
    return true;
  }

  ShardingCodec codec_;
  size_t element_size_;
  size_t inner_nbytes_ = 0;
  size_t row_bytes_ = 0;
  bool contiguous_ = false;
};

std::vector<CodecSpec> parse_codec_list(const nlohmann::json& config, const char* key) {
  const nlohmann::json& list = config[key];
  if (!list.is_array()) {
    fail(ErrorCode::kInvalidMetadata, "sharding_indexed: '{}' must be a list of codecs, got {}",
         key, list.dump());
  }
  std::vector<CodecSpec> specs;
  for (const nlohmann::json& item : list) {
    CodecSpec spec;
    if (item.is_string()) {
      spec.name = item.get<std::string>();
    } else if (item.is_object() && item.contains("name") && item["name"].is_string()) {
      spec.name = item["name"].get<std::string>();
      if (item.contains("configuration")) spec.configuration = item["configuration"];
    } else {
      fail(ErrorCode::kInvalidMetadata, "sharding_indexed: bad codec {} in '{}'", item.dump(), key);
    }
    if (spec.name == "sharding_indexed") {
      fail(ErrorCode::kUnsupported, "sharding_indexed: nested sharding is not supported");
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace

std::unique_ptr<ArrayToBytesCodec> make_sharding_codec(const nlohmann::json& config,
                                                       const ChunkLayout& decoded,
                                                       std::span<const std::byte> fill_value) {
  ShardingCodec codec;
  codec.shard_shape = decoded.shape;
  const size_t rank = decoded.shape.size();
  const auto& chunk_shape =
      config.contains("chunk_shape") ? config["chunk_shape"] : nlohmann::json();
  if (!chunk_shape.is_array() || chunk_shape.size() != rank) {
    fail(ErrorCode::kInvalidMetadata, "sharding_indexed: chunk_shape must list {} extents, got {}",
         rank, chunk_shape.dump());
  }
  for (size_t d = 0; d < rank; ++d) {
    const auto& v = chunk_shape[d];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 ||
        decoded.shape[d] % v.get<int64_t>() != 0) {
      fail(ErrorCode::kInvalidMetadata,
           "sharding_indexed: chunk_shape {} must divide the shard shape [{}] into whole chunks",
           chunk_shape.dump(), fmt::join(decoded.shape, ", "));
    }
    codec.inner_chunk_shape.push_back(v.get<int64_t>());
    codec.chunks_per_shard.push_back(decoded.shape[d] / v.get<int64_t>());
  }
  if (!config.contains("codecs")) {
    fail(ErrorCode::kInvalidMetadata, "sharding_indexed: configuration needs 'codecs'");
  }
  std::vector<CodecSpec> inner = parse_codec_list(config, "codecs");
  std::vector<CodecSpec> index_specs;
  if (config.contains("index_codecs")) {
    index_specs = parse_codec_list(config, "index_codecs");
  } else {
    index_specs = {{"bytes", {{"endian", "little"}}}, {"crc32c", nlohmann::json::object()}};
  }
  if (config.contains("index_location")) {
    const auto& location = config["index_location"];
    if (location != "start" && location != "end") {
      fail(ErrorCode::kInvalidMetadata,
           "sharding_indexed: index_location must be \"start\" or \"end\", got {}",
           location.dump());
    }
    codec.index_at_end = location == "end";
  }
  if (!fill_value.empty() && fill_value.size() != decoded.dtype.size) {
    fail(ErrorCode::kInvalidArgument, "sharding_indexed: fill value of {} bytes, expected {}",
         fill_value.size(), decoded.dtype.size);
  }
  codec.fill_value.assign(fill_value.begin(), fill_value.end());
  codec.inner = CodecChain::create(inner, decoded.dtype, codec.inner_chunk_shape, fill_value);
  std::vector<int64_t> index_shape = codec.chunks_per_shard;
  index_shape.push_back(2);
  codec.index_codecs = CodecChain::create(index_specs, DataType{DTypeKind::kUInt, 8}, index_shape);
  const std::optional<int64_t> index_nbytes = fixed_encoded_nbytes(*codec.index_codecs);
  if (!index_nbytes) {
    fail(ErrorCode::kUnsupported,
         "sharding_indexed: index_codecs [{}] do not give a fixed index size",
         codec.index_codecs->describe());
  }
  codec.index_nbytes_ = static_cast<uint64_t>(*index_nbytes);
  return std::make_unique<ShardingArrayToBytes>(std::move(codec), decoded.dtype.size);
}

}  // namespace chute
