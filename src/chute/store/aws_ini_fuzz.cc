// libFuzzer target: arbitrary bytes as an AWS credentials/config INI file. It either parses or
// throws chute::Error; nothing else.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chute/store/aws_config.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const chute::IniSections sections =
        chute::parse_ini(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& [name, keys] : sections) {
      for (const auto& [key, value] : keys) {
        if (key.empty()) __builtin_trap();
      }
    }
  } catch (const chute::Error&) {
  }
  return 0;
}
