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
    case kHdf5Bzip2:
      return "bzip2";
    case kHdf5Lzf:
      return "lzf";
    case kHdf5Blosc2:
      return "blosc2";
    default:
      return "";
  }
}

/// The codecs of the HDF5 filters in src/chute/codec/, configured from the filter's client data.
CodecSpec hdf5_plugin_spec(const Hdf5Filter& filter, const DataType& data_type,
                           const std::string& where) {
  const auto& cd = filter.client_data;
  const auto refuse = [&](const std::string& why) {
    fail(ErrorCode::kUnsupported, "{}: HDF5 filter {} ('{}'): {}", where, filter.id,
         known_name(filter.id), why);
  };
  switch (filter.id) {
    case kHdf5Szip:
      // cd: options mask, pixels per block, bits per pixel, pixels per scanline.
      if (cd.size() < 4) refuse(fmt::format("{} parameters, expected 4", cd.size()));
      return {"szip",
              {{"options_mask", cd[0]},
               {"pixels_per_block", cd[1]},
               {"bits_per_pixel", cd[2]},
               {"pixels_per_scanline", cd[3]}}};
    case kHdf5Bzip2:
      return {"bzip2", {{"level", cd.empty() || cd[0] < 1 || cd[0] > 9 ? 9 : cd[0]}}};
    case kHdf5Lzf:
      return {"lzf", nlohmann::json::object()};
    case kHdf5Bitshuffle: {
      // cd: filter version, bitshuffle version, element size, block size (elements, 0 for the
      // default), compression (0 none, 2 LZ4, 3 Zstandard), Zstandard level.
      nlohmann::json config = {
          {"elementsize", cd.size() > 2 && cd[2] > 0 ? cd[2] : data_type.size}};
      if (cd.size() > 3) config["blocksize"] = cd[3];
      if (cd.size() > 4) config["compression"] = cd[4];
      if (cd.size() > 4 && cd[4] != 0 && cd[4] != 2 && cd[4] != 3) {
        refuse(fmt::format("compression {} (chute decodes none, LZ4 and Zstandard)", cd[4]));
      }
      return {"bitshuffle", config};
    }
    case kHdf5Nbit: {
      // Reduced-precision floats have custom fields the filter's parameters do not describe.
      if (cd.size() >= 8 && cd[1] == 0 && cd[3] == 1 && data_type.kind == DTypeKind::kFloat) {
        refuse(fmt::format("floats of reduced precision ({} of {} bits) are not supported", cd[6],
                           cd[4] * 8));
      }
      if (cd.size() >= 4 && cd[1] == 0 && cd[3] != 1) {
        refuse("packed array and compound types are not supported");
      }
      const char* kind = data_type.kind == DTypeKind::kInt     ? "int"
                         : data_type.kind == DTypeKind::kFloat ? "float"
                                                               : "uint";
      return {"nbit", {{"cd", cd}, {"kind", kind}}};
    }
    default:  // kHdf5ScaleOffset
      if (cd.size() > 3 && cd[3] == 1 && cd[0] == 1) {
        refuse("the E-scaling method is not supported (libhdf5 does not implement it either)");
      }
      return {"scaleoffset", {{"cd", cd}}};
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
      case kHdf5Szip:
      case kHdf5Nbit:
      case kHdf5ScaleOffset:
      case kHdf5Bzip2:
      case kHdf5Lzf:
      case kHdf5Bitshuffle:
        specs.push_back(hdf5_plugin_spec(filter, data_type, where));
        break;
      default: {
        std::string name = filter.name.empty() ? known_name(filter.id) : filter.name;
        fail(ErrorCode::kUnsupported,
             "{}: unsupported HDF5 filter {} ('{}'); chute decodes deflate (1), shuffle (2), "
             "fletcher32 (3), szip (4), nbit (5), scaleoffset (6), bzip2 (307), lzf (32000), "
             "blosc (32001), lz4 (32004), bitshuffle (32008) and zstd (32015)",
             where, filter.id, name);
      }
    }
  }
  return specs;
}

}  // namespace chute
