#include "chute/device/device.h"

#include <charconv>
#include <string>

#include "chute/device/standin_device.h"
#include "chute/util/error.h"

namespace chute {

DevicePtr open_device(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  int ordinal = 0;
  if (colon != std::string_view::npos) {
    const std::string_view number = spec.substr(colon + 1);
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ordinal);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() ||
        ordinal < 0) {
      fail(ErrorCode::kInvalidArgument,
           "device '{}': expected 'cuda' or 'cuda:N' with N a GPU number >= 0", spec);
    }
  }
  if (kind == "cuda") return open_cuda_device(ordinal);
  if (kind == "standin") return std::make_shared<StandInDevice>(ordinal);
  fail(ErrorCode::kInvalidArgument,
       "device '{}': unknown device kind '{}'; expected 'cuda' or 'cuda:N' (or 'standin:N', the "
       "host-memory stand-in for tests)",
       spec, kind);
}

}  // namespace chute
