// The v3 `transpose` codec: permutes the chunk's axes; encoded axis i is decoded axis order[i].

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "chute/codec/codec.h"
#include "chute/util/error.h"

namespace chute {
namespace {

/// Walks the encoded array in C order; `strides[i]` (in elements) is how far one step along
/// encoded axis i moves in the decoded array. Gather reads decoded -> writes encoded (encode);
/// scatter reads encoded -> writes decoded (decode).
template <size_t N>
void permute(const std::byte* src, std::byte* dst, const std::vector<int64_t>& shape,
             const std::vector<int64_t>& strides, bool gather) {
  const size_t rank = shape.size();
  for (int64_t extent : shape) {
    if (extent == 0) return;
  }
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = shape[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  int64_t linear = 0;  // position in the encoded (C order) array
  int64_t other = 0;   // position in the decoded array
  while (true) {
    if (gather) {
      for (int64_t k = 0; k < inner; ++k) {
        std::memcpy(dst + (linear + k) * N, src + (other + k * inner_stride) * N, N);
      }
    } else {
      for (int64_t k = 0; k < inner; ++k) {
        std::memcpy(dst + (other + k * inner_stride) * N, src + (linear + k) * N, N);
      }
    }
    linear += inner;
    size_t axis = rank - 1;
    while (true) {
      if (axis == 0) return;
      --axis;
      other += strides[axis];
      if (++index[axis] < shape[axis]) break;
      other -= strides[axis] * shape[axis];
      index[axis] = 0;
    }
  }
}

class TransposeCodec final : public ArrayToArrayCodec {
 public:
  TransposeCodec(const ChunkLayout& decoded, std::vector<int64_t> order)
      : order_(std::move(order)) {
    const size_t rank = order_.size();
    encoded_.dtype = decoded.dtype;
    std::vector<int64_t> decoded_strides(rank, 1);
    for (size_t i = rank; i-- > 1;) decoded_strides[i - 1] = decoded_strides[i] * decoded.shape[i];
    for (size_t i = 0; i < rank; ++i) {
      encoded_.shape.push_back(decoded.shape[order_[i]]);
      strides_.push_back(decoded_strides[order_[i]]);
    }
  }

  const ChunkLayout& encoded_layout() const override { return encoded_; }

  void decode(std::span<const std::byte> encoded, std::span<std::byte> decoded) const override {
    run(encoded.data(), decoded.data(), /*gather=*/false);
  }
  void encode(std::span<const std::byte> decoded, std::span<std::byte> encoded) const override {
    run(decoded.data(), encoded.data(), /*gather=*/true);
  }

  std::string describe() const override {
    return fmt::format("transpose({})", fmt::join(order_, ","));
  }

 private:
  void run(const std::byte* src, std::byte* dst, bool gather) const {
    if (order_.empty()) {
      std::memcpy(dst, src, encoded_.dtype.size);
      return;
    }
    switch (encoded_.dtype.size) {
      case 1:
        return permute<1>(src, dst, encoded_.shape, strides_, gather);
      case 2:
        return permute<2>(src, dst, encoded_.shape, strides_, gather);
      case 4:
        return permute<4>(src, dst, encoded_.shape, strides_, gather);
      case 8:
        return permute<8>(src, dst, encoded_.shape, strides_, gather);
      case 16:
        return permute<16>(src, dst, encoded_.shape, strides_, gather);
      default:
        fail(ErrorCode::kInternal, "transpose of {}-byte elements", encoded_.dtype.size);
    }
  }

  std::vector<int64_t> order_;
  std::vector<int64_t> strides_;  // decoded-array stride of each encoded axis
  ChunkLayout encoded_;
};

}  // namespace

std::unique_ptr<ArrayToArrayCodec> make_transpose_codec(const nlohmann::json& config,
                                                        const ChunkLayout& decoded) {
  const size_t rank = decoded.shape.size();
  std::vector<int64_t> order(rank);
  auto it = config.find("order");
  if (it == config.end()) {
    fail(ErrorCode::kInvalidMetadata, "transpose: configuration needs 'order'");
  }
  if (*it == "C" || *it == "F") {
    std::iota(order.begin(), order.end(), 0);
    if (*it == "F") std::reverse(order.begin(), order.end());
  } else {
    if (!it->is_array() || it->size() != rank) {
      fail(ErrorCode::kInvalidMetadata, "transpose: order must be a permutation of {} axes, got {}",
           rank, it->dump());
    }
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < rank; ++i) {
      const auto& v = (*it)[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
          v.get<int64_t>() >= static_cast<int64_t>(rank) || seen[v.get<int64_t>()]) {
        fail(ErrorCode::kInvalidMetadata,
             "transpose: order must be a permutation of {} axes, got {}", rank, it->dump());
      }
      order[i] = v.get<int64_t>();
      seen[order[i]] = true;
    }
  }
  return std::make_unique<TransposeCodec>(decoded, std::move(order));
}

}  // namespace chute
