#include "chute/array/zarr_chunk_source.h"

#include <fmt/ranges.h>

#include "chute/array/chunk_grid.h"
#include "chute/util/error.h"

namespace chute {

ZarrChunkSource::ZarrChunkSource(StorePtr store, std::string prefix, ChunkKeyEncoding encoding,
                                 std::vector<int64_t> chunk_shape, CodecChainPtr chain)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      encoding_(encoding),
      chunk_shape_(std::move(chunk_shape)),
      chain_(std::move(chain)) {}

ChunkLocation ZarrChunkSource::locate(std::span<const int64_t> coords, ReadScratch& scratch,
                                      ReadStats* stats) const {
  append_chunk_key(scratch.key, prefix_, encoding_, coords);
  return {.found = true,
          .store = store_.get(),
          .offset = 0,
          .nbytes = std::nullopt,
          .chain = chain_.get()};
}

std::string ZarrChunkSource::storage_key(std::span<const int64_t> coords) const {
  return join_key(prefix_, chunk_key(encoding_, coords));
}

ShardedZarrChunkSource::ShardedZarrChunkSource(StorePtr store, std::string prefix,
                                               ChunkKeyEncoding encoding,
                                               std::span<const int64_t> array_shape,
                                               std::vector<int64_t> shard_shape,
                                               CodecChainPtr chain, const std::string& name)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      encoding_(encoding),
      chain_(std::move(chain)),
      sharding_(chain_->sharding()),
      shard_indexes_(std::make_shared<ShardIndexCache>()) {
  if (sharding_ == nullptr) {
    fail(ErrorCode::kInternal, "array '{}': a sharded source without a sharding codec", name);
  }
  const auto& inner = sharding_->inner_chunk_shape;
  bool consistent = inner.size() == array_shape.size() &&
                    sharding_->chunks_per_shard.size() == array_shape.size();
  for (size_t d = 0; consistent && d < inner.size(); ++d) {
    consistent = inner[d] > 0 && inner[d] * sharding_->chunks_per_shard[d] == shard_shape[d];
  }
  if (!consistent) {
    fail(ErrorCode::kInvalidMetadata,
         "array '{}': expected inner chunks [{}] to divide the shard shape [{}]", name,
         fmt::join(inner, ", "), fmt::join(shard_shape, ", "));
  }
  shard_grid_shape_ = chunk_grid_shape(array_shape, shard_shape);
}

ChunkLocation ShardedZarrChunkSource::locate(std::span<const int64_t> coords, ReadScratch& scratch,
                                             ReadStats* stats) const {
  int64_t shard_coords[kMaxCopyRank];
  int64_t inner_coords[kMaxCopyRank];
  const size_t n = coords.size();
  for (size_t d = 0; d < n; ++d) {
    shard_coords[d] = coords[d] / sharding_->chunks_per_shard[d];
    inner_coords[d] = coords[d] % sharding_->chunks_per_shard[d];
  }
  append_chunk_key(scratch.key, prefix_, encoding_, {shard_coords, n});
  const ShardIndexPtr index = shard_index({shard_coords, n}, scratch, stats);
  if (index->empty()) return {};  // no shard
  const int64_t position = sharding_->inner_position({inner_coords, n});
  if (position < 0 || static_cast<size_t>(position) >= index->size()) {
    fail(ErrorCode::kInternal, "inner chunk position {} outside a shard index of {} entries",
         position, index->size());
  }
  const ShardIndexEntry entry = (*index)[static_cast<size_t>(position)];
  if (entry.is_empty()) return {};
  return {.found = true,
          .store = store_.get(),
          .offset = entry.offset,
          .nbytes = entry.nbytes,
          .chain = sharding_->inner.get()};
}

std::string ShardedZarrChunkSource::describe_chunk(std::span<const int64_t> coords) const {
  return fmt::format(" (inner chunk [{}])", fmt::join(coords, ", "));
}

std::string ShardedZarrChunkSource::storage_key(std::span<const int64_t> coords) const {
  std::vector<int64_t> shard(coords.size());
  for (size_t d = 0; d < shard.size(); ++d) shard[d] = coords[d] / sharding_->chunks_per_shard[d];
  return join_key(prefix_, chunk_key(encoding_, shard));
}

ShardIndexPtr ShardedZarrChunkSource::shard_index(std::span<const int64_t> shard_coords,
                                                  ReadScratch& scratch, ReadStats* stats) const {
  const int64_t shard = linear_chunk_index(shard_coords, shard_grid_shape_);
  if (ShardIndexPtr cached = shard_indexes_->find(shard)) return cached;

  const std::optional<uint64_t> shard_nbytes = store_->size(scratch.key);
  if (!shard_nbytes) return shard_indexes_->insert(shard, std::make_shared<const ShardIndex>());
  const uint64_t index_nbytes = sharding_->index_encoded_nbytes();
  if (*shard_nbytes < index_nbytes) {
    fail(ErrorCode::kCorruptData, "expected a shard of at least {} bytes (its index), found {}",
         index_nbytes, *shard_nbytes);
  }
  const uint64_t offset = sharding_->index_offset(*shard_nbytes);
  scratch.encoded.resize_for_overwrite(index_nbytes);
  if (!store_->read_range(scratch.key, offset, scratch.encoded.span())) {
    return shard_indexes_->insert(shard, std::make_shared<const ShardIndex>());
  }
  if (stats) stats->bytes_read += static_cast<int64_t>(index_nbytes);
  sharding_->decode_index(scratch.encoded.span(), *shard_nbytes, scratch.shard_index,
                          scratch.codec);
  if (scratch.shard_index.empty()) {
    fail(ErrorCode::kInternal, "decoded shard index has no entries");
  }
  return shard_indexes_->insert(shard, std::make_shared<const ShardIndex>(scratch.shard_index));
}

}  // namespace chute
