// libFuzzer target: treats arbitrary bytes as the start of an .npy file and parses its header.
// Any input must either parse (into a header whose sizes do not overflow) or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <span>

#include "chute/format/npy_header.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const chute::NpyHeader header = chute::parse_npy_header(bytes, "fuzz.npy");
    if (header.data_offset > size) __builtin_trap();
    (void)header.data_nbytes();
  } catch (const chute::Error&) {
  }
  return 0;
}
