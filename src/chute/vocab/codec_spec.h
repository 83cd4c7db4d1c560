#pragma once
// A codec as the array's metadata names it: the vocabulary shared by the formats that describe
// chunks (Zarr, HDF5 filters mapped onto numcodecs names) and the codec layer that runs them.

#include <nlohmann/json.hpp>
#include <string>

namespace chute {

/// One codec of the chain, in encode order, with its configuration as written in the metadata.
/// v2 compressors and filters keep their numcodecs id as name ("blosc", "zstd", "delta", ...);
/// v3 names are the spec's ("bytes", "transpose", "blosc", "sharding_indexed", ...).
struct CodecSpec {
  std::string name;
  nlohmann::json configuration = nlohmann::json::object();
};

}  // namespace chute
