#include <algorithm>

#include "chute/format/contiguous_source.h"
#include "chute/format/npy.h"
#include "chute/format/npy_header.h"
#include "chute/util/error.h"

namespace chute {

bool is_npy_path(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

ArrayPtr open_npy(const std::string& path) {
  auto file = std::make_shared<const SingleFileStore>(path);
  // The preamble, then the whole header (its length is in the preamble).
  std::vector<std::byte> head(static_cast<size_t>(std::min<uint64_t>(file->file_size(), 12)));
  file->read_range("", 0, head);
  // The claimed length is checked against the file before anything is allocated for it: a
  // 70-byte file may claim a 4 GiB header.
  const uint64_t header_nbytes = npy_header_nbytes(head, path);
  if (header_nbytes > file->file_size()) {
    fail(ErrorCode::kCorruptData,
         "'{}': not a valid .npy header: expected a header of {} bytes, the file holds {}", path,
         header_nbytes, file->file_size());
  }
  head.resize(static_cast<size_t>(header_nbytes));
  file->read_range("", 0, head);
  const NpyHeader header = parse_npy_header(head, path);

  auto source = std::make_shared<const ContiguousSource>(file, header.data_offset, header.shape,
                                                         header.data_type, header.endian,
                                                         header.fortran_order, path);
  ArrayMetadata metadata;
  metadata.format = "npy";
  metadata.zarr_format = 0;
  metadata.shape = header.shape;
  metadata.chunk_shape = source->chunk_shape();
  metadata.data_type = header.data_type;
  metadata.codecs = source->codec_specs();
  return std::make_shared<const Array>(std::move(source), std::move(metadata), path);
}

}  // namespace chute
