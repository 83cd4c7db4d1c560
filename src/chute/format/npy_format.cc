// .npy files as a Format: recognised by the magic "\x93NUMPY" at the start of a local file, or by
// the name "*.npy" (so a missing file or a URL gets the .npy error, not Zarr's).

#include <fmt/format.h>

#include "chute/format/format.h"
#include "chute/format/npy.h"
#include "chute/format/sniff.h"
#include "chute/store/open_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

constexpr std::string_view kNpyMagic = "\x93NUMPY";

class NpyFileFormat final : public Format {
 public:
  std::string_view name() const override { return "npy"; }
  std::optional<FormatMatch> recognise(const std::string& path) const override {
    if (is_npy_path(path) || read_file_bytes(path, 0, kNpyMagic.size()) == kNpyMagic) {
      return FormatMatch{path, ""};
    }
    return std::nullopt;
  }
  ArrayPtr open_array(const FormatMatch& match, const std::string& path,
                      const CacheOptions&) const override {
    refuse_url(path);
    return open_npy(match.container);
  }
  Group open_group(const FormatMatch&, const std::string& path,
                   const CacheOptions&) const override {
    refuse_url(path);
    fail(ErrorCode::kInvalidArgument, "'{}' is a NumPy .npy array, not a group", path);
  }
  bool is_group(const FormatMatch&, const std::string&) const override { return false; }

 private:
  static void refuse_url(const std::string& path) {
    if (!is_url(path)) return;
    fail(ErrorCode::kUnsupported,
         "'{}': NumPy .npy files are read from local paths only; over a URL chute reads Zarr "
         "stores (copy the file locally, or convert it to Zarr)",
         path);
  }
};

}  // namespace

const Format& npy_file_format() {
  static const NpyFileFormat format;
  return format;
}

}  // namespace chute
