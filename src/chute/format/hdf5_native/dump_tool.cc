// hdf5_native_dump FILE: prints, as JSON, what the native HDF5 reader finds in FILE (every
// object reached through hard links, its datatype, dataspace, fill value, filters, layout,
// attributes and chunk index), for the tests that compare it with h5py.
// hdf5_native_dump FILE --time PATH [--repeat N]: the best time of N opens of the dataset at
// PATH (superblock, object header and whole chunk index), in seconds.

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "chute/format/hdf5_native/file.h"
#include "chute/util/error.h"

namespace h5n = chute::h5native;
using nlohmann::json;

namespace {

json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json hex(std::span<const std::byte> bytes) {
  std::string s;
  for (std::byte b : bytes) s += fmt::format("{:02x}", static_cast<unsigned>(b));
  return s;
}

json dims(const std::vector<uint64_t>& v) {
  json out = json::array();
  for (uint64_t d : v) out.push_back(d == h5n::kUndefined ? json(nullptr) : json(d));
  return out;
}

json type_json(const h5n::Datatype& t) {
  return {{"class", t.class_name()}, {"dtype", t.numpy()}, {"size", t.size}};
}

json attribute_json(const h5n::File& file, const h5n::Attribute& a, const std::string& where) {
  json j = type_json(a.type);
  j["shape"] = a.space.kind == h5n::Dataspace::Kind::kScalar ? json(nullptr) : dims(a.space.dims);
  try {
    json values = json::array();
    if (a.type.is_numeric()) {
      const h5n::Datatype& t = a.type.cls == h5n::Datatype::Class::kEnum ? *a.type.base : a.type;
      if (t.cls == h5n::Datatype::Class::kFloat) {
        for (double v : h5n::numeric_values(a.type, a.data, where)) values.push_back(number(v));
      } else {
        for (size_t i = 0; i < a.data.size() / t.size; ++i) {
          uint64_t bits = 0;
          for (size_t b = 0; b < t.size; ++b) {
            const size_t at = t.big_endian ? t.size - 1 - b : b;
            bits |= static_cast<uint64_t>(a.data[i * t.size + at]) << (8 * b);
          }
          if (t.is_signed) {
            const int shift = 64 - 8 * static_cast<int>(t.size);
            values.push_back(static_cast<int64_t>(bits << shift) >> shift);
          } else {
            values.push_back(bits);
          }
        }
      }
    } else if (a.type.cls == h5n::Datatype::Class::kString || a.type.vlen_string) {
      for (auto& s : file.strings(a, where)) values.push_back(s);
    } else {
      values = "unsupported";
    }
    j["value"] = values;
  } catch (const chute::Error& e) {
    j["error"] = e.what();
  }
  return j;
}

const char* layout_name(h5n::Layout::Class c) {
  static const char* const names[] = {"compact", "contiguous", "chunked", "virtual"};
  return names[static_cast<int>(c)];
}

const char* index_name(h5n::Layout::Index i) {
  static const char* const names[] = {"btree_v1",    "single_chunk",     "implicit",
                                      "fixed_array", "extensible_array", "btree_v2"};
  return names[static_cast<int>(i)];
}

json selection_json(const h5n::Selection& s) {
  static const char* const kinds[] = {"none", "points", "hyperslab", "all"};
  json j = {{"kind", kinds[static_cast<int>(s.kind)]}};
  if (s.kind != h5n::Selection::Kind::kHyperslab) return j;
  j["regular"] = s.regular;
  if (s.regular) {
    j["start"] = dims(s.start);
    j["stride"] = dims(s.stride);
    j["count"] = dims(s.count);
    j["block"] = dims(s.block);
  } else {
    j["first"] = s.block_first;
    j["last"] = s.block_last;
  }
  return j;
}

json dataset_json(const h5n::File& file, const h5n::Object& o) {
  const h5n::Dataset d = file.dataset(o);
  json j = type_json(d.type);
  j["kind"] = "dataset";
  j["shape"] = d.space.kind == h5n::Dataspace::Kind::kScalar ? json(nullptr) : dims(d.space.dims);
  j["maxshape"] = dims(d.space.maxdims);
  j["layout"] = layout_name(d.layout.cls);
  j["layout_version"] = d.layout.version;
  j["fill"] = {{"defined", d.fill.defined},
               {"alloc_time", d.fill.alloc_time},
               {"write_time", d.fill.write_time},
               {"value", d.fill.value ? hex(*d.fill.value) : json(nullptr)}};
  json filters = json::array();
  for (const auto& f : d.filters) {
    filters.push_back(
        {{"id", f.id}, {"name", f.name}, {"flags", f.flags}, {"client_data", f.client_data}});
  }
  j["filters"] = filters;
  const uint64_t base = file.superblock().position;
  if (d.layout.cls == h5n::Layout::Class::kChunked) {
    j["chunks"] = d.layout.chunk;
    j["index"] = index_name(d.layout.index);
    const h5n::ChunkIndex index = file.chunk_index(o, d);
    json entries = json::array();
    for (size_t i = 0; i < index.count(); ++i) {
      json coords = json::array();
      for (size_t k = 0; k < index.rank; ++k) {
        coords.push_back(index.coords[i * index.rank + k] * d.layout.chunk[k]);
      }
      entries.push_back({coords, index.records[i].filter_mask, index.records[i].address + base,
                         index.records[i].size});
    }
    j["chunk_index"] = entries;
  } else if (d.layout.cls == h5n::Layout::Class::kContiguous) {
    j["address"] =
        d.layout.address == h5n::kUndefined ? json(nullptr) : json(d.layout.address + base);
    j["size"] = d.layout.size;
  } else if (d.layout.cls == h5n::Layout::Class::kCompact) {
    j["data"] = hex(d.layout.compact);
  } else if (d.layout.cls == h5n::Layout::Class::kVirtual) {
    json mappings = json::array();
    for (const auto& m : file.virtual_mappings(o, d)) {
      mappings.push_back({{"file", m.file},
                          {"dataset", m.dataset},
                          {"source", selection_json(m.source)},
                          {"target", selection_json(m.target)}});
    }
    j["virtual"] = mappings;
  }
  return j;
}

void walk(const h5n::File& file, const h5n::Object& o, json& objects, std::set<uint64_t>& seen) {
  json j;
  const std::string where = file.name() + ": " + o.path;
  try {
    if (o.kind == h5n::Object::Kind::kDataset) {
      j = dataset_json(file, o);
    } else {
      j["kind"] = o.kind == h5n::Object::Kind::kGroup ? "group" : "datatype";
    }
    json attrs = json::object();
    for (const auto& a : file.attributes(o)) attrs[a.name] = attribute_json(file, a, where);
    j["attrs"] = attrs;
  } catch (const chute::Error& e) {
    j["error"] = e.what();
  }
  objects[o.path] = j;
  if (o.kind != h5n::Object::Kind::kGroup) return;
  std::vector<h5n::Link> links;
  try {
    links = file.links(o);
  } catch (const chute::Error& e) {
    objects[o.path]["error"] = e.what();
  }
  for (const auto& link : links) {
    const std::string path = o.path == "/" ? "/" + link.name : o.path + "/" + link.name;
    if (link.kind == h5n::Link::Kind::kHard) {
      if (!seen.insert(link.address).second) {
        objects[path] = {{"kind", "hardlink_seen"}};
        continue;
      }
      try {
        walk(file, file.object(link.address, path), objects, seen);
      } catch (const chute::Error& e) {
        objects[path] = {{"error", e.what()}};
      }
      continue;
    }
    json l = {{"kind", link.kind == h5n::Link::Kind::kSoft ? "softlink" : "externallink"},
              {"target", link.target},
              {"file", link.file}};
    try {
      const auto r = file.resolve(path);
      l["resolved_kind"] = r.object.kind == h5n::Object::Kind::kDataset ? "dataset" : "group";
      if (r.object.kind == h5n::Object::Kind::kDataset) {
        l["resolved"] = dataset_json(*r.file, r.object);
      }
    } catch (const chute::Error& e) {
      l["error"] = e.what();
    }
    objects[path] = l;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hdf5_native_dump FILE [--time PATH [--repeat N]]\n");
    return 2;
  }
  try {
    const std::string path = argv[1];
    if (argc >= 4 && std::string(argv[2]) == "--time") {
      const std::string dataset = argv[3];
      const int repeat = argc >= 6 ? std::stoi(argv[5]) : 5;
      double best = 1e9;
      size_t chunks = 0;
      for (int i = 0; i < repeat; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto file = h5n::File::open_path(path);
        auto r = file->resolve(dataset);
        auto d = r.file->dataset(r.object);
        chunks = r.file->chunk_index(r.object, d).count();
        const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
        best = std::min(best, dt.count());
      }
      std::cout << json{{"seconds", best}, {"chunks", chunks}}.dump() << "\n";
      return 0;
    }
    auto file = h5n::File::open_path(path);
    json out;
    out["superblock"] = {{"version", file->superblock().version},
                         {"position", file->superblock().position},
                         {"offset_size", file->superblock().offset_size}};
    json objects = json::object();
    std::set<uint64_t> seen{file->superblock().root};
    walk(*file, file->root(), objects, seen);
    out["objects"] = objects;
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } catch (const chute::Error& e) {
    std::cout << json{{"error", e.what()}, {"code", chute::error_code_name(e.code())}}.dump(
                     -1, ' ', false, json::error_handler_t::replace)
              << "\n";
    return 1;
  }
  return 0;
}
