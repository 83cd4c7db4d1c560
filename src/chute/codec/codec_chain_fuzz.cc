// libFuzzer target: decodes arbitrary bytes through one of a few codec chains (picked by the
// first byte) into a fixed-size output. Any input must either decode or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/util/error.h"

namespace {

const char* const kChains[] = {
    R"([{"name":"bytes"},{"name":"blosc","configuration":{"cname":"lz4","shuffle":1}}])",
    R"([{"name":"bytes"},{"name":"zstd"}])",
    R"([{"name":"bytes"},{"name":"gzip"}])",
    R"([{"name":"bytes"},{"name":"zlib"}])",
    R"([{"name":"bytes"},{"name":"lz4"}])",
    R"([{"name":"bytes","configuration":{"endian":"big"}},{"name":"crc32c"}])",
    R"([{"name":"delta","configuration":{"dtype":"<i4","astype":"<i2"}},{"name":"bytes"},
        {"name":"zlib"}])",
    R"([{"name":"transpose","configuration":{"order":[1,0]}},{"name":"bytes"},
        {"name":"blosc"},{"name":"zstd"}])",
};
constexpr size_t kChainCount = sizeof(kChains) / sizeof(kChains[0]);

const std::vector<chute::CodecChainPtr>& chains() {
  static const std::vector<chute::CodecChainPtr> built = [] {
    std::vector<chute::CodecChainPtr> out;
    const std::vector<int64_t> shape = {32, 32};
    for (const char* json : kChains) {
      std::vector<chute::CodecSpec> specs;
      for (const auto& item : nlohmann::json::parse(json)) {
        chute::CodecSpec spec;
        spec.name = item["name"];
        if (item.contains("configuration")) spec.configuration = item["configuration"];
        specs.push_back(spec);
      }
      out.push_back(chute::CodecChain::create(specs, {chute::DTypeKind::kInt, 4}, shape));
    }
    return out;
  }();
  return built;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const chute::CodecChain& chain = *chains()[data[0] % kChainCount];
  static chute::CodecScratch scratch;
  static std::vector<std::byte> out(static_cast<size_t>(chain.decoded_nbytes()));
  const std::span<const std::byte> encoded{reinterpret_cast<const std::byte*>(data + 1), size - 1};
  try {
    chain.decode(encoded, out, scratch);
  } catch (const chute::Error&) {
  }
  // Part of the chunk too (blosc decodes only the blocks of the range), the range taken from
  // the input's size so the corpus keeps its layout.
  const size_t begin = size * 37 % out.size();
  const size_t end = begin + 1 + size * 11 % (out.size() - begin);
  try {
    chain.decode_part(encoded, begin, end, out, scratch);
  } catch (const chute::Error&) {
  }
  // And read in part from a store holding the input (header, block table, the range's blocks).
  const chute::StreamReader read = [&](uint64_t offset, std::span<std::byte> into) {
    if (offset > encoded.size() || into.size() > encoded.size() - offset) {
      chute::fail(chute::ErrorCode::kCorruptData, "read past the end");
    }
    std::memcpy(into.data(), encoded.data() + offset, into.size());
  };
  static chute::ByteBuffer stream;
  try {
    chain.read_part(read, encoded.size(), begin, end, stream, out, scratch);
  } catch (const chute::Error&) {
  }
  return 0;
}
