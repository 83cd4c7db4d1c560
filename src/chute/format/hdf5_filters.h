#pragma once
// An HDF5 dataset's filter pipeline as chute codec specs, without libhdf5 (so it is unit tested
// and fuzzed alone): the stored chunk is the elements in the dataset's byte order ("bytes"),
// then the filters in the order HDF5 applied them. chute decodes: deflate (1), shuffle (2),
// fletcher32 (3), szip (4), n-bit (5), scale-offset (6), and the registered plugins bzip2
// (307), LZF (32000), blosc (32001), lz4 (32004), bitshuffle (32008) and zstd (32015).

#include <cstdint>
#include <string>
#include <vector>

#include "chute/vocab/codec_spec.h"
#include "chute/vocab/dtype.h"

namespace chute {

/// One filter of a dataset's pipeline, as H5Pget_filter2 reports it.
struct Hdf5Filter {
  int id = 0;
  std::string name;  // as stored in the file, may be empty
  std::vector<unsigned> client_data;
};

enum Hdf5FilterId : int {
  kHdf5Deflate = 1,
  kHdf5Shuffle = 2,
  kHdf5Fletcher32 = 3,
  kHdf5Szip = 4,
  kHdf5Nbit = 5,
  kHdf5ScaleOffset = 6,
  kHdf5Bzip2 = 307,
  kHdf5Lzf = 32000,
  kHdf5Blosc = 32001,
  kHdf5Lz4 = 32004,
  kHdf5Bitshuffle = 32008,
  kHdf5Zstd = 32015,
  kHdf5Blosc2 = 32026,
};

/// The codec specs of chunks of `data_type` stored in `endian` order through `filters`, leaving
/// out those whose bit is set in `filter_mask` (filters HDF5 skipped for that chunk). Throws
/// kUnsupported naming the filter (id and name) and `where` (file and dataset) for any other.
std::vector<CodecSpec> hdf5_codec_specs(const std::vector<Hdf5Filter>& filters,
                                        const DataType& data_type, Endian endian,
                                        unsigned filter_mask, const std::string& where);

}  // namespace chute
