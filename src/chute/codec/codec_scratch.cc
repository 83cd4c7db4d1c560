// CodecScratch and its lazily created contexts, plus small helpers shared by the codec files.

#include <libdeflate.h>

#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  if (deflate_) libdeflate_free_decompressor(deflate_);
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

libdeflate_decompressor* CodecScratch::Contexts::deflate_decompressor() {
  if (!deflate_) {
    deflate_ = libdeflate_alloc_decompressor();
    if (!deflate_)
      fail(ErrorCode::kInternal, "libdeflate_alloc_decompressor failed (out of memory)");
  }
  return deflate_;
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

namespace {

#if defined(__SSE2__)
/// Elements [0, count - count % 16) of a byte-unshuffle of 2- or 4-byte elements, 16 at a time
/// in SSE2 registers (every x86-64 CPU has SSE2); returns how many it did.
size_t unshuffle_sse2(const std::byte* const* streams, size_t count, size_t element_size,
                      std::byte* out) {
  const size_t done = count / 16 * 16;
  const auto load = [&](size_t stream, size_t i) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(streams[stream] + i));
  };
  const auto store = [&](size_t at, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + at), v);
  };
  if (element_size == 2) {
    for (size_t i = 0; i < done; i += 16) {
      const __m128i a = load(0, i);
      const __m128i b = load(1, i);
      store(2 * i, _mm_unpacklo_epi8(a, b));
      store(2 * i + 16, _mm_unpackhi_epi8(a, b));
    }
    return done;
  }
  for (size_t i = 0; i < done; i += 16) {  // element_size 4
    const __m128i a = load(0, i);
    const __m128i b = load(1, i);
    const __m128i c = load(2, i);
    const __m128i d = load(3, i);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b);  // a0 b0 a1 b1 ... a7 b7
    const __m128i ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d);
    const __m128i cd_hi = _mm_unpackhi_epi8(c, d);
    store(4 * i, _mm_unpacklo_epi16(ab_lo, cd_lo));  // elements 0..3
    store(4 * i + 16, _mm_unpackhi_epi16(ab_lo, cd_lo));
    store(4 * i + 32, _mm_unpacklo_epi16(ab_hi, cd_hi));
    store(4 * i + 48, _mm_unpackhi_epi16(ab_hi, cd_hi));
  }
  return done;
}
#endif

}  // namespace

void byte_unshuffle_streams(std::span<const std::byte* const> streams, size_t count,
                            std::byte* out) {
  const size_t element_size = streams.size();
  size_t first = 0;  // elements already placed by a register kernel
#if defined(__SSE2__)
  if (element_size == 2 || element_size == 4) {
    first = unshuffle_sse2(streams.data(), count, element_size, out);
  }
#endif
  for (size_t j = 0; j < element_size; ++j) {
    const std::byte* src = streams[j];
    std::byte* dst = out + j;
    for (size_t i = first; i < count; ++i) dst[i * element_size] = src[i];
  }
}

void byte_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, size_t element_size) {
  const size_t count = in.size() / element_size;
  constexpr size_t kMaxInline = 16;
  const std::byte* inline_streams[kMaxInline];
  std::vector<const std::byte*> many;
  const std::byte** streams = inline_streams;
  if (element_size > kMaxInline) {
    many.resize(element_size);
    streams = many.data();
  }
  for (size_t j = 0; j < element_size; ++j) streams[j] = in.data() + j * count;
  byte_unshuffle_streams({streams, element_size}, count, out.data());
  const size_t done = count * element_size;
  if (in.size() > done) std::memcpy(out.data() + done, in.data() + done, in.size() - done);
}

}  // namespace chute
