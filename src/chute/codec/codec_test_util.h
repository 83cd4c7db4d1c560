#pragma once
// Helpers for the codec tests: hex literals, chains from JSON text, deterministic test data, and
// assertions on chute::Error codes and messages.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "chute/codec/codec_chain.h"
#include "chute/util/error.h"

namespace chute::testing {

inline std::vector<std::byte> from_hex(const std::string& hex) {
  std::vector<std::byte> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

inline std::string to_hex(std::span<const std::byte> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::byte b : bytes) {
    s += digits[static_cast<int>(b) >> 4];
    s += digits[static_cast<int>(b) & 15];
  }
  return s;
}

/// Parses a JSON list of {"name", "configuration"} objects.
inline std::vector<CodecSpec> specs(const std::string& json) {
  std::vector<CodecSpec> out;
  for (const auto& item : nlohmann::json::parse(json)) {
    CodecSpec spec;
    spec.name = item["name"];
    if (item.contains("configuration")) spec.configuration = item["configuration"];
    out.push_back(std::move(spec));
  }
  return out;
}

inline CodecChainPtr chain(const std::string& json, DataType dtype, std::vector<int64_t> shape,
                           std::span<const std::byte> fill_value = {}) {
  return CodecChain::create(specs(json), dtype, shape, fill_value);
}

/// Encodes one chunk through `c` with a fresh scratch.
inline std::vector<std::byte> encode(const CodecChain& c, std::span<const std::byte> decoded) {
  CodecScratch scratch;
  ByteBuffer out;
  c.encode(decoded, out, scratch);
  return {out.data(), out.data() + out.size()};
}

/// Decodes one whole chunk through `c` with a fresh scratch.
inline std::vector<std::byte> decode(const CodecChain& c, std::span<const std::byte> encoded) {
  CodecScratch scratch;
  std::vector<std::byte> out(static_cast<size_t>(c.decoded_nbytes()));
  c.decode(encoded, out, scratch);
  return out;
}

/// Compressible but not trivial bytes: a slow ramp with some noise.
inline std::vector<std::byte> pattern(size_t n, uint32_t seed = 1) {
  std::vector<std::byte> out(n);
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<std::byte>((i / 64) + ((x >> 28) & 3));
  }
  return out;
}

template <typename T>
std::vector<std::byte> as_bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

}  // namespace chute::testing

/// Asserts that `statement` throws chute::Error with `code` and a message containing `substr`.
#define EXPECT_CHUTE_ERROR(statement, error_code, substr)                               \
  do {                                                                                  \
    try {                                                                               \
      statement;                                                                        \
      ADD_FAILURE() << "expected chute::Error " #error_code " containing '" << (substr) \
                    << "', nothing thrown";                                             \
    } catch (const ::chute::Error& e) {                                                 \
      EXPECT_EQ(e.code(), error_code) << e.what();                                      \
      EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(substr));                 \
    }                                                                                   \
  } while (0)
