// Zarr reference sets (kerchunk, VirtualiZarr) as a format: "refs.json" or "refs.json/var" opens
// the Zarr hierarchy the references describe, read through a ReferenceStore. Asked before Zarr,
// which would otherwise report a missing .zarray for a JSON file.

#include "chute/format/format.h"
#include "chute/format/zarr.h"
#include "chute/format/zarr_parse.h"
#include "chute/store/reference_store.h"
#include "chute/util/error.h"

namespace chute {
namespace {

class ReferenceFormat final : public Format {
 public:
  std::string_view name() const override { return "zarr"; }

  // "refs.json/temperature" -> ("refs.json", "temperature") when a leading part of the path is a
  // reference set; a Parquet reference folder is recognised so that opening it says why not.
  std::optional<FormatMatch> recognise(const std::string& path) const override {
    if (is_reference_location(path) || is_parquet_reference_folder(path)) {
      return FormatMatch{path, ""};
    }
    for (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0;
         slash = path.rfind('/', slash - 1)) {
      const std::string head = path.substr(0, slash);
      if (is_reference_location(head)) return FormatMatch{head, path.substr(slash + 1)};
    }
    return std::nullopt;
  }

  ArrayPtr open_array(const FormatMatch& match, const std::string& path,
                      const CacheOptions& cache) const override {
    StorePtr store = open(match, cache);
    if (ArrayPtr array = try_open_zarr_array(store, match.member, path)) return array;
    if (ArrayPtr array = open_consolidated_member(store, "", match.member, path)) return array;
    if (store_has_group(*store, match.member)) {
      fail(ErrorCode::kInvalidArgument, "'{}' is a Zarr group, not an array; open it as a group",
           path);
    }
    fail(ErrorCode::kNotFound, "reference file '{}' holds no array '{}'", match.container,
         match.member);
  }

  Group open_group(const FormatMatch& match, const std::string& path,
                   const CacheOptions& cache) const override {
    return open_zarr_group(open(match, cache), match.member, path);
  }

  bool is_group(const FormatMatch& match, const std::string&) const override {
    try {
      if (!is_reference_location(match.container)) return false;  // Parquet not registered
      return store_has_group(*open_reference_store(match.container), match.member);
    } catch (const Error& e) {
      if (is_transient(e.code())) throw;
      return false;
    }
  }

 private:
  static StorePtr open(const FormatMatch& match, const CacheOptions& cache) {
    // A Parquet set is readable once the Python layer registered it (is_reference_location).
    if (is_parquet_reference_folder(match.container) && !is_reference_location(match.container)) {
      fail(ErrorCode::kUnsupported,
           "'{}' is a Parquet reference set (kerchunk); chute's core reads JSON reference files: "
           "open it from Python with pyarrow installed (chute.open_group), or write the "
           "references as JSON",
           match.container);
    }
    return with_cache(open_reference_store(match.container), cache);
  }
};

}  // namespace

const Format& reference_set_format() {
  static const ReferenceFormat format;
  return format;
}

}  // namespace chute
