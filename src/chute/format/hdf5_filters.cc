#include "chute/format/hdf5_filters.h"

#include "chute/util/error.h"

namespace chute {
namespace {

const char* known_name(int id) {
  switch (id) {
    case kHdf5Deflate:
      return "deflate";
    case kHdf5Shuffle:
      return "shuffle";
    case kHdf5Fletcher32:
      return "fletcher32";
    case kHdf5Szip:
      return "szip";
    case kHdf5Nbit:
      return "nbit";
    case kHdf5ScaleOffset:
      return "scaleoffset";
    case kHdf5Blosc:
      return "blosc";
    case kHdf5Lz4:
      return "lz4";
    case kHdf5Bitshuffle:
      return "bitshuffle";
    case kHdf5Zstd:
      return "zstd";
    default:
      return "";
  }
}

}  // namespace

std::vector<CodecSpec> hdf5_codec_specs(const std::vector<Hdf5Filter>& filters,
                                        const DataType& data_type, Endian endian,
                                        unsigned filter_mask, const std::string& where) {
  std::vector<CodecSpec> specs;
  nlohmann::json bytes = nlohmann::json::object();
  if (data_type.size > 1) bytes["endian"] = endian == Endian::kBig ? "big" : "little";
  specs.push_back({"bytes", bytes});
  for (size_t i = 0; i < filters.size(); ++i) {
    if (i < 32 && (filter_mask >> i) & 1u) continue;  // skipped for this chunk
    const Hdf5Filter& filter = filters[i];
    const auto& cd = filter.client_data;
    switch (filter.id) {
      case kHdf5Deflate:
        specs.push_back({"zlib", {{"level", cd.empty() ? 6 : static_cast<int>(cd[0] % 10)}}});
        break;
      case kHdf5Shuffle:
        specs.push_back({"shuffle", {{"elementsize", static_cast<int>(data_type.size)}}});
        break;
      case kHdf5Fletcher32:
        specs.push_back({"fletcher32", nlohmann::json::object()});
        break;
      case kHdf5Blosc: {
        // cd: filter version, blosc version, type size, chunk bytes, [clevel, shuffle,
        // compressor]; the chunk is one blosc frame, whose header is all decoding needs, the
        // rest only matters for encoding (make-dataset).
        static const char* const kCompressors[] = {"blosclz", "lz4",  "lz4hc",
                                                   "snappy",  "zlib", "zstd"};
        nlohmann::json config = {{"typesize", static_cast<int>(data_type.size)}};
        if (cd.size() > 4) config["clevel"] = static_cast<int>(cd[4] % 10);
        if (cd.size() > 5) config["shuffle"] = static_cast<int>(cd[5] % 3);
        if (cd.size() > 6 && cd[6] < 6) config["cname"] = kCompressors[cd[6]];
        specs.push_back({"blosc", config});
        break;
      }
      case kHdf5Lz4:
        specs.push_back({"hdf5_lz4", cd.empty() || cd[0] == 0
                                         ? nlohmann::json::object()
                                         : nlohmann::json{{"blocksize", cd[0]}}});
        break;
      case kHdf5Zstd:
        specs.push_back({"zstd", {{"level", cd.empty() ? 0 : static_cast<int>(cd[0])}}});
        break;
      default: {
        std::string name = filter.name.empty() ? known_name(filter.id) : filter.name;
        fail(ErrorCode::kUnsupported,
             "{}: unsupported HDF5 filter {} ('{}'); chute decodes deflate (1), shuffle (2), "
             "fletcher32 (3), blosc (32001), lz4 (32004) and zstd (32015)",
             where, filter.id, name);
      }
    }
  }
  return specs;
}

}  // namespace chute
