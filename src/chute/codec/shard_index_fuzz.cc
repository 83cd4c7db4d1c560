// libFuzzer target: treats arbitrary bytes as a shard (index at the end or the start, picked by
// the first byte), decodes and validates its index, then decodes the whole shard. Any input must
// either decode or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/codec/sharding.h"
#include "chute/util/error.h"

namespace {

chute::CodecChainPtr make_chain(const char* location) {
  auto config = nlohmann::json::parse(R"({"chunk_shape":[2,2],"codecs":[{"name":"bytes"},
      {"name":"zstd"}],"index_codecs":[{"name":"bytes","configuration":{"endian":"little"}},
      {"name":"crc32c"}]})");
  config["index_location"] = location;
  std::vector<chute::CodecSpec> specs = {{"sharding_indexed", config}};
  const std::vector<int64_t> shape = {4, 6};
  const std::byte fill{0x2A};
  return chute::CodecChain::create(specs, {chute::DTypeKind::kUInt, 1}, shape, {&fill, 1});
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const chute::CodecChainPtr chains[2] = {make_chain("end"), make_chain("start")};
  const chute::CodecChain& chain = *chains[data[0] & 1];
  const chute::ShardingCodec& sharding = *chain.sharding();
  const std::span<const std::byte> shard(reinterpret_cast<const std::byte*>(data + 1), size - 1);
  static chute::CodecScratch scratch;
  static std::vector<chute::ShardIndexEntry> index;
  static std::vector<std::byte> out(static_cast<size_t>(chain.decoded_nbytes()));
  try {
    const uint64_t n = sharding.index_encoded_nbytes();
    if (shard.size() >= n) {
      sharding.decode_index(shard.subspan(sharding.index_offset(shard.size()), n), shard.size(),
                            index, scratch);
    }
    chain.decode(shard, out, scratch);
  } catch (const chute::Error&) {
  }
  return 0;
}
