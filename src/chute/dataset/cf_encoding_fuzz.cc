// libFuzzer target: one input is read as the JSON attributes of a Zarr array (as xarray writes
// them) and parsed as a CF encoding for several stored dtypes and both Zarr formats; what the
// parser accepts is then decoded. A `units` text (and `calendar`) goes through the CF time parser
// (cf_time.h) and decodes integer and float values. Every failure must be a chute::Error; any
// other exception or crash is a bug.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "chute/dataset/cf_decoding.h"
#include "chute/dataset/cf_time.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chute;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json attributes = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (attributes.is_discarded()) return 0;
  if (attributes.is_object() && attributes.contains("units") && attributes["units"].is_string()) {
    try {
      const std::string units = attributes["units"].get<std::string>();
      (void)looks_like_cf_time_units(units);
      const CfTimeUnits parsed = parse_cf_time_units(units, "fuzz");
      check_cf_calendar(attributes, parsed, "fuzz");
      for (const int64_t v :
           {int64_t{0}, int64_t{-1}, int64_t{1} << 40, static_cast<int64_t>(size)}) {
        try {
          (void)cf_time_seconds(v, parsed, "fuzz");
        } catch (const Error&) {
        }
      }
      for (const double v : {0.5, -1e12, 1e300, static_cast<double>(size) / 3}) {
        try {
          (void)cf_time_seconds(v, parsed, "fuzz");
        } catch (const Error&) {
        }
      }
    } catch (const Error&) {
    }
  }
  const DataType types[] = {{DTypeKind::kInt, 2},
                            {DTypeKind::kUInt, 1},
                            {DTypeKind::kFloat, 4},
                            {DTypeKind::kFloat, 8},
                            {DTypeKind::kBool, 1}};
  for (const DataType type : types) {
    for (int format : {2, 3}) {
      ArrayMetadata meta;
      meta.zarr_format = format;
      meta.data_type = type;
      meta.fill_value.assign(type.size, std::byte{0x7f});
      meta.attributes = attributes;
      try {
        detail::ChannelDecode decode;
        decode.stored = type;
        decode.cf = detail::parse_cf_encoding(meta, "fuzz");
        if (!detail::is_decodable(type)) continue;
        std::vector<std::byte> raw(16 * type.size, std::byte{0x41});
        std::vector<float> out(16);
        detail::decode_run(raw.data(), 16, decode, reinterpret_cast<std::byte*>(out.data()), 1,
                           DataType{DTypeKind::kFloat, 4});
      } catch (const Error&) {
      }
    }
  }
  return 0;
}
