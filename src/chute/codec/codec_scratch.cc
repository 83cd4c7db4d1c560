// CodecScratch and its lazily created contexts, plus small helpers shared by the codec files.

#include <cstring>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {

CodecScratch::CodecScratch() = default;
CodecScratch::~CodecScratch() = default;
CodecScratch::CodecScratch(CodecScratch&&) noexcept = default;
CodecScratch& CodecScratch::operator=(CodecScratch&&) noexcept = default;

ByteBuffer& CodecScratch::buffer(size_t i) {
  if (i >= 4) fail(ErrorCode::kInternal, "CodecScratch::buffer({}) out of range [0, 4)", i);
  return buffers_[i];
}

CodecScratch::Contexts& CodecScratch::contexts() {
  if (!contexts_) contexts_ = std::make_unique<Contexts>();
  return *contexts_;
}

CodecScratch::Contexts::~Contexts() {
  ZSTD_freeDCtx(zstd_dctx_);
  ZSTD_freeCCtx(zstd_cctx_);
  if (inflate_zlib_) inflateEnd(inflate_zlib_.get());
  if (inflate_gzip_) inflateEnd(inflate_gzip_.get());
}

ZSTD_DCtx* CodecScratch::Contexts::zstd_dctx() {
  if (!zstd_dctx_) {
    zstd_dctx_ = ZSTD_createDCtx();
    if (!zstd_dctx_) fail(ErrorCode::kInternal, "ZSTD_createDCtx failed (out of memory)");
  }
  return zstd_dctx_;
}

ZSTD_CCtx* CodecScratch::Contexts::zstd_cctx() {
  if (!zstd_cctx_) {
    zstd_cctx_ = ZSTD_createCCtx();
    if (!zstd_cctx_) fail(ErrorCode::kInternal, "ZSTD_createCCtx failed (out of memory)");
  }
  return zstd_cctx_;
}

z_stream* CodecScratch::Contexts::inflater(int window_bits) {
  std::unique_ptr<z_stream>& slot = window_bits > 15 ? inflate_gzip_ : inflate_zlib_;
  if (!slot) {
    auto stream = std::make_unique<z_stream>();
    std::memset(stream.get(), 0, sizeof(z_stream));
    if (inflateInit2(stream.get(), window_bits) != Z_OK) {
      fail(ErrorCode::kInternal, "inflateInit2 failed (out of memory)");
    }
    slot = std::move(stream);
  } else if (inflateReset(slot.get()) != Z_OK) {
    fail(ErrorCode::kInternal, "inflateReset failed");
  }
  return slot.get();
}

CodecScratch& CodecScratch::Contexts::nested() {
  if (!nested_) nested_ = std::make_unique<CodecScratch>();
  return *nested_;
}

int64_t ChunkLayout::num_elements() const {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

void fail_size(const char* codec, uint64_t expected, uint64_t got) {
  fail(ErrorCode::kCorruptData, "{}: expected {} decoded bytes, got {}", codec, expected, got);
}

std::string dtype_label(const DataType& dtype) {
  const char* kind = "?";
  switch (dtype.kind) {
    case DTypeKind::kBool:
      return "bool";
    case DTypeKind::kInt:
      kind = "int";
      break;
    case DTypeKind::kUInt:
      kind = "uint";
      break;
    case DTypeKind::kFloat:
      kind = "float";
      break;
    case DTypeKind::kComplex:
      kind = "complex";
      break;
    case DTypeKind::kBFloat:
      kind = "bfloat";
      break;
  }
  return fmt::format("{}{}", kind, dtype.size * 8);
}

DataType parse_filter_dtype(const nlohmann::json& config, const char* key, const char* codec) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_string()) {
    fail(ErrorCode::kInvalidMetadata, "{}: configuration needs a string '{}', got {}", codec, key,
         it == config.end() ? "nothing" : it->dump());
  }
  std::string name = it->get<std::string>();
  try {
    if (!name.empty() && std::string_view("<>|=").find(name[0]) != std::string_view::npos) {
      // The byte order is not the filter's business: the chain swaps bytes at the array->bytes
      // step, so filters always see native values (zarr-python agrees, see the interop tests).
      name[0] = '<';
      return parse_v2_data_type(name, nullptr);
    }
    // The Zarr v3 names are NumPy's ("float32", "uint8", ...); NumPy has no bfloat16.
    const DataType named = parse_v3_data_type(name);
    if (named.kind == DTypeKind::kBFloat) {
      fail(ErrorCode::kUnsupported, "unsupported data type {}", it->dump());
    }
    return named;
  } catch (const Error& e) {
    throw e.with_context(fmt::format("{}: '{}'", codec, key));
  }
}

int64_t config_int(const nlohmann::json& config, const char* key, int64_t fallback,
                   const char* codec) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) {
    fail(ErrorCode::kInvalidMetadata, "{}: '{}' must be an integer, got {}", codec, key,
         it->dump());
  }
  return it->get<int64_t>();
}

void byte_shuffle(std::span<const std::byte> in, std::span<std::byte> out, size_t element_size) {
  const size_t count = in.size() / element_size;
  for (size_t j = 0; j < element_size; ++j) {
    std::byte* dst = out.data() + j * count;
    const std::byte* src = in.data() + j;
    for (size_t i = 0; i < count; ++i) dst[i] = src[i * element_size];
  }
  const size_t done = count * element_size;
  if (in.size() > done) std::memcpy(out.data() + done, in.data() + done, in.size() - done);
}

void byte_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, size_t element_size) {
  const size_t count = in.size() / element_size;
  for (size_t j = 0; j < element_size; ++j) {
    const std::byte* src = in.data() + j * count;
    std::byte* dst = out.data() + j;
    for (size_t i = 0; i < count; ++i) dst[i * element_size] = src[i];
  }
  const size_t done = count * element_size;
  if (in.size() > done) std::memcpy(out.data() + done, in.data() + done, in.size() - done);
}

}  // namespace chute
