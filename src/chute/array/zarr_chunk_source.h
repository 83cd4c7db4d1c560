#pragma once
// Zarr's chunk sources: one stored value per chunk under its key; and sharded Zarr, where a
// shard is a nested source of inner chunks found through the shard's index (fetched once per
// shard and cached).

#include <memory>
#include <string>
#include <vector>

#include "chute/array/chunk_source.h"
#include "chute/array/metadata.h"
#include "chute/array/shard_index_cache.h"

namespace chute {

class ZarrChunkSource final : public ChunkSource {
 public:
  /// `prefix` is the array's folder in `store`; `chain` decodes whole chunks of `chunk_shape`.
  ZarrChunkSource(StorePtr store, std::string prefix, ChunkKeyEncoding encoding,
                  std::vector<int64_t> chunk_shape, CodecChainPtr chain);

  const std::vector<int64_t>& chunk_shape() const override { return chunk_shape_; }
  const CodecChain& chain() const override { return *chain_; }
  ChunkLocation locate(std::span<const int64_t> coords, ReadScratch& scratch,
                       ReadStats* stats) const override;
  std::string storage_key(std::span<const int64_t> coords) const override;
  const Store& store() const override { return *store_; }
  StorePtr store_ptr() const override { return store_; }

 private:
  StorePtr store_;
  std::string prefix_;
  ChunkKeyEncoding encoding_;
  std::vector<int64_t> chunk_shape_;
  CodecChainPtr chain_;
};

class ShardedZarrChunkSource final : public ChunkSource {
 public:
  /// Shards of `shard_shape` in `array_shape`, decoded by `sharding` (the outer chain's
  /// sharding codec, kept alive by `chain`). Throws kInvalidMetadata naming `name` when the
  /// inner chunks do not divide the shard.
  ShardedZarrChunkSource(StorePtr store, std::string prefix, ChunkKeyEncoding encoding,
                         std::span<const int64_t> array_shape, std::vector<int64_t> shard_shape,
                         CodecChainPtr chain, const std::string& name);

  const std::vector<int64_t>& chunk_shape() const override { return sharding_->inner_chunk_shape; }
  const CodecChain& chain() const override { return *sharding_->inner; }
  ChunkLocation locate(std::span<const int64_t> coords, ReadScratch& scratch,
                       ReadStats* stats) const override;
  std::string describe_chunk(std::span<const int64_t> coords) const override;
  /// The key of the chunk's shard.
  std::string storage_key(std::span<const int64_t> coords) const override;
  const Store& store() const override { return *store_; }
  StorePtr store_ptr() const override { return store_; }

 private:
  /// The decoded index of the shard whose key is in scratch.key (cached); empty when missing.
  ShardIndexPtr shard_index(std::span<const int64_t> shard_coords, ReadScratch& scratch,
                            ReadStats* stats) const;

  StorePtr store_;
  std::string prefix_;
  ChunkKeyEncoding encoding_;
  CodecChainPtr chain_;
  const ShardingCodec* sharding_;
  std::vector<int64_t> shard_grid_shape_;
  std::shared_ptr<ShardIndexCache> shard_indexes_;
};

}  // namespace chute
