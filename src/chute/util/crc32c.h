#pragma once
// CRC-32C (Castagnoli), as the Zarr v3 crc32c codec and numcodecs' CRC32C use it: reflected
// polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise.

#include <cstddef>
#include <cstdint>
#include <span>

namespace chute {

/// The CRC-32C of `data`; crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::span<const std::byte> data);

/// Continues a CRC over more data: crc32c_extend(crc32c(a), b) == crc32c(a + b).
uint32_t crc32c_extend(uint32_t crc, std::span<const std::byte> data);

/// The table-driven version, exposed so tests can compare both paths.
uint32_t crc32c_extend_portable(uint32_t crc, std::span<const std::byte> data);

}  // namespace chute
