// libFuzzer target: one input is read as a v2 .zarray, a v3 zarr.json array, a v3 group
// zarr.json (with consolidated members) and a v2 .zmetadata. Every failure must be a chute::Error;
// any other exception or crash is a bug.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chute/format/zarr.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace {

template <typename Fn>
void expect_only_chute_errors(Fn&& fn) {
  try {
    fn();
  } catch (const chute::Error&) {
  }
}

void use(const chute::ArrayMetadata& md) {
  // Derived values must be computable for anything the parser accepts.
  (void)md.num_elements();
  (void)md.chunk_nbytes();
  std::vector<int64_t> coords(md.rank(), 1);
  (void)chunk_key(md.chunk_key_encoding, coords);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chute;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  expect_only_chute_errors([&] { use(parse_zarr_v2_array(text, "", "fuzz")); });
  expect_only_chute_errors(
      [&] { use(parse_zarr_v2_array(R"({"zarr_format": 2})", text, "fuzz")); });
  expect_only_chute_errors([&] { use(parse_zarr_v3_array(text, "fuzz")); });

  expect_only_chute_errors([&] {
    auto store = std::make_shared<MemoryStore>();
    store->set("g/zarr.json", text);
    Group group = open_zarr_group(store, "g", "g");
    for (const auto& [path, array] : group.arrays) use(array->metadata());
  });
  expect_only_chute_errors([&] {
    auto store = std::make_shared<MemoryStore>();
    store->set(".zgroup", std::string_view(R"({"zarr_format": 2})"));
    store->set(".zmetadata", text);
    Group group = open_zarr_group(store, "", "g");
    for (const auto& [path, array] : group.arrays) use(array->metadata());
  });
  expect_only_chute_errors([&] {
    auto store = std::make_shared<MemoryStore>();
    store->set("a/.zarray", text);
    use(open_zarr_array(store, "a", "a")->metadata());
  });
  return 0;
}
