// libFuzzer target: the first byte picks an object header message decoder (datatype,
// dataspace, fill values, filter pipeline, data layout, link, link/attribute info, attribute,
// virtual dataset mappings, the messages of a v1 or v2 header block); the rest is its bytes. Any
// input must either decode or throw chute::Error.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "chute/format/hdf5_native/messages.h"
#include "chute/format/hdf5_native/object_header.h"
#include "chute/format/hdf5_native/virtual.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  namespace h5n = chute::h5native;
  h5n::Cursor in(bytes, "fuzz");
  try {
    switch (data[0] % 12) {
      case 0: {
        const auto t = h5n::decode_datatype(in);
        (void)t.numpy();
        break;
      }
      case 1: {
        const auto s = h5n::decode_dataspace(in);
        if (s.maxdims.size() != s.dims.size()) __builtin_trap();
        break;
      }
      case 2:
        h5n::decode_fill_value(in);
        break;
      case 3:
        h5n::decode_old_fill_value(in);
        break;
      case 4:
        h5n::decode_filter_pipeline(in);
        break;
      case 5: {
        const auto l = h5n::decode_layout(in);
        (void)l.chunk_bytes();
        break;
      }
      case 6:
        h5n::decode_link(in);
        break;
      case 7:
        h5n::decode_link_info(in);
        break;
      case 8:
        h5n::decode_attribute_info(in);
        break;
      case 9: {
        const auto a = h5n::decode_attribute(in);
        if (a.shared_type_address == h5n::kUndefined &&
            a.data.size() != a.space.count() * a.type.size) {
          __builtin_trap();
        }
        break;
      }
      case 10:
        h5n::decode_virtual_mappings(in);
        break;
      default: {
        std::vector<h5n::Message> messages;
        h5n::decode_header_messages(in, data[0] % 2 ? 1 : 2, data[0] & 4, bytes.size(), messages);
        break;
      }
    }
  } catch (const chute::Error&) {
  }
  return 0;
}
