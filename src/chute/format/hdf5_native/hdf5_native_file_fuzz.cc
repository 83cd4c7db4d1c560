// libFuzzer target: treats arbitrary bytes as an HDF5 file and reads all of it natively (the
// superblock, every object header reached through hard links, links of every storage kind,
// attributes, datasets and their chunk indexes: B-trees v1/v2, fractal and global heaps, fixed
// and extensible arrays, virtual dataset mappings), and what chute's HDF5 format makes of each
// dataset (its type, its attributes as JSON, its NetCDF-4 dimensions through object references
// and dimension ids, string elements through the global heap). Any input must either be read or
// throw chute::Error.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "chute/format/hdf5_file.h"
#include "chute/format/hdf5_native/file.h"
#include "chute/format/hdf5_native/virtual_dataset.h"
#include "chute/format/hdf5_netcdf.h"
#include "chute/format/hdf5_types.h"
#include "chute/store/memory_store.h"
#include "chute/util/error.h"

namespace {

void walk(const chute::h5native::File& file, const chute::h5native::Object& o,
          std::set<uint64_t>& seen, int depth) {
  using chute::h5native::Object;
  if (depth > 16) return;
  try {
    for (const auto& a : file.attributes(o)) {
      if (a.type.is_numeric()) chute::h5native::numeric_values(a.type, a.data, "fuzz");
      if (a.type.cls == chute::h5native::Datatype::Class::kString || a.type.vlen_string) {
        file.strings(a, "fuzz");
      }
    }
    if (o.kind == Object::Kind::kDataset) {
      const auto d = file.dataset(o);
      const auto attributes = file.attributes(o);
      chute::hdf5::read_attributes(file, attributes, "fuzz");
      chute::hdf5::is_dimension_only(file, attributes);
      chute::hdf5::NetcdfScales scales;
      try {
        chute::hdf5::dataset_dimensions(file, o, d.space.dims.size(), attributes, scales, "fuzz");
      } catch (const chute::Error&) {
      }
      try {
        chute::Endian endian;
        chute::hdf5::data_type(d.type, &endian, "fuzz");
      } catch (const chute::Error&) {
      }
      // A string dataset's elements (compact, or the first MiB of contiguous ones), variable-length
      // ones resolved through the global heap.
      if ((d.type.cls == chute::h5native::Datatype::Class::kString || d.type.vlen_string) &&
          d.type.size > 0) {
        try {
          std::vector<std::byte> raw = d.layout.compact;
          if (d.layout.cls == chute::h5native::Layout::Class::kContiguous &&
              d.layout.address != chute::h5native::kUndefined) {
            raw = file.reader().read_upto(d.layout.address,
                                          std::min<uint64_t>(d.layout.size, 1 << 20), "fuzz");
          }
          file.string_elements(d.type, raw, raw.size() / d.type.size, "fuzz");
        } catch (const chute::Error&) {
        }
      }
      if (d.layout.cls == chute::h5native::Layout::Class::kChunked) {
        const auto index = file.chunk_index(o, d);
        if (index.coords.size() != index.count() * index.rank) __builtin_trap();
        for (const auto& r : index.records) {
          if (!file.reader().contains(r.address, r.size)) __builtin_trap();
        }
      }
      if (d.layout.cls == chute::h5native::Layout::Class::kVirtual) {
        // Each mapping resolved as if its source had the virtual dataset's extent.
        std::vector<int64_t> shape;
        for (uint64_t n : d.space.dims) shape.push_back(static_cast<int64_t>(n & 0xffffffff));
        for (const auto& m : file.virtual_mappings(o, d)) {
          try {
            std::vector<int64_t> source = shape;
            if (m.source.kind == chute::h5native::Selection::Kind::kHyperslab) {
              source.assign(m.source.rank, 100);
            }
            chute::hdf5::resolve_mapping(m, source, shape, "fuzz");
          } catch (const chute::Error&) {
          }
        }
      }
    }
  } catch (const chute::Error&) {
  }
  if (o.kind != Object::Kind::kGroup) return;
  try {
    for (const auto& link : file.links(o)) {
      if (link.kind == chute::h5native::Link::Kind::kSoft) {
        try {
          file.resolve(o.path + "/" + link.name);
        } catch (const chute::Error&) {
        }
      }
      if (link.kind != chute::h5native::Link::Kind::kHard || !seen.insert(link.address).second) {
        continue;
      }
      try {
        walk(file, file.object(link.address, o.path + "/" + link.name), seen, depth + 1);
      } catch (const chute::Error&) {
      }
    }
  } catch (const chute::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto store = std::make_shared<chute::MemoryStore>();
  const auto* begin = reinterpret_cast<const std::byte*>(data);
  store->set("f.h5", std::vector<std::byte>(begin, begin + size));
  try {
    auto file = chute::h5native::File::open(store, "f.h5", "fuzz.h5");
    std::set<uint64_t> seen{file->superblock().root};
    walk(*file, file->root(), seen, 0);
  } catch (const chute::Error&) {
  }
  return 0;
}
