// HDF5 (and NetCDF-4, which is HDF5) files as a Format: recognised by the signature at offset 0,
// 512, 1024, 2048, ... (after a user block) of a leading part of the path that is a local file;
// over a URL by the extension, to refuse it clearly.

#include <fmt/format.h>

#include "chute/format/format.h"
#include "chute/format/hdf5.h"
#include "chute/format/sniff.h"
#include "chute/store/open_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr std::string_view kHdf5Signature = "\x89HDF\r\n\x1a\n";

bool looks_like_hdf5_url(const std::string& url) {
  for (const char* ext : {".h5/", ".hdf5/", ".he5/", ".nc/", ".nc4/"}) {
    if ((url + "/").find(ext) != std::string::npos) return true;
  }
  return false;
}

void refuse_url(const std::string& path) {
  if (!is_url(path)) return;
  fail(ErrorCode::kUnsupported,
       "'{}': HDF5 files are read from local paths only; over a URL chute reads Zarr stores "
       "(copy the file locally, or convert it to Zarr)",
       path);
}

class Hdf5FileFormat final : public Format {
 public:
  std::string_view name() const override { return "hdf5"; }
  std::optional<FormatMatch> recognise(const std::string& path) const override {
    if (is_url(path)) {
      return looks_like_hdf5_url(path) ? std::optional<FormatMatch>(FormatMatch{path, ""})
                                       : std::nullopt;
    }
    return split_at_file(path, has_hdf5_signature);
  }
  ArrayPtr open_array(const FormatMatch& match, const std::string& path,
                      const CacheOptions&) const override {
    refuse_url(path);
    return open_hdf5(match.container, match.member);
  }
  Group open_group(const FormatMatch& match, const std::string& path,
                   const CacheOptions&) const override {
    refuse_url(path);
    return open_hdf5_group(match.container, match.member);
  }
  bool is_group(const FormatMatch& match, const std::string& path) const override {
    return !is_url(path) && is_hdf5_group(match.container, match.member);
  }
};

}  // namespace

bool has_hdf5_signature(const std::string& file) {
  const auto size = regular_file_size(file);
  if (!size) return false;
  for (uint64_t offset = 0; offset + kHdf5Signature.size() <= *size;
       offset = offset == 0 ? 512 : offset * 2) {
    if (read_file_bytes(file, offset, kHdf5Signature.size()) == kHdf5Signature) return true;
  }
  return false;
}

const Format& hdf5_file_format() {
  static const Hdf5FileFormat format;
  return format;
}

}  // namespace chute
