#include "chute/synth/hdf5_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>

#include "chute/format/hdf5_native/bytes.h"
#include "chute/util/element_count.h"
#include "chute/util/error.h"

namespace chute::synth {
// File-local, in a named namespace: a unity build compiles this file with others of synth/.
namespace h5file {

constexpr uint64_t kUndefinedAddress = ~uint64_t{0};
constexpr uint64_t kSuperblockSize = 48;
// libhdf5's fixed arrays page their data block past 2^10 entries; so do these.
constexpr int kPageBits = 10;
constexpr uint64_t kDataAlignment = 4096;

/// Little-endian bytes of an HDF5 structure.
class Encoder {
 public:
  void u8(uint64_t v) { bytes_.push_back(static_cast<std::byte>(v & 0xff)); }
  void uint(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) u8(v >> (8 * i));
  }
  void u16(uint64_t v) { uint(v, 2); }
  void u32(uint64_t v) { uint(v, 4); }
  void u64(uint64_t v) { uint(v, 8); }
  void text(const std::string& s) {
    for (char c : s) u8(static_cast<unsigned char>(c));
  }
  void append(std::span<const std::byte> more) {
    bytes_.insert(bytes_.end(), more.begin(), more.end());
  }
  /// Appends the lookup3 checksum of bytes [from, end).
  void checksum(size_t from = 0) { u32(h5native::lookup3(std::span(bytes_).subspan(from))); }
  size_t size() const { return bytes_.size(); }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

struct Message {
  uint8_t type;
  uint8_t flags;  // bit 0: constant
  Encoder data;
};

/// A version 2 object header ("OHDR") holding `messages` in one chunk, without times.
std::vector<std::byte> object_header(std::vector<Message>& messages) {
  uint64_t body = 0;
  for (Message& m : messages) body += 4 + m.data.size();
  Encoder e;
  e.text("OHDR");
  e.u8(2);
  e.u8(2);  // flags: the size of chunk 0 in 4 bytes
  e.u32(body);
  for (Message& m : messages) {
    if (m.data.size() > 0xffff) fail(ErrorCode::kInvalidArgument, "HDF5 message too large");
    e.u8(m.type);
    e.u16(m.data.size());
    e.u8(m.flags);
    e.append(m.data.bytes());
  }
  e.checksum();
  return std::move(e.bytes());
}

/// Bytes that hold `v` as libhdf5 sizes its fields: (floor(log2 v) + 8) / 8.
int encoded_length(uint64_t v) { return (std::bit_width(std::max<uint64_t>(v, 1)) - 1 + 8) / 8; }

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

void pwrite_all(int fd, const void* data, size_t size, uint64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const std::byte*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno(errno, "write", path);
    }
    done += static_cast<size_t>(n);
  }
}

/// The fixed array of a chunked dataset: its header ("FAHD") and data block ("FADB"), the
/// block paged (a bitmap of written pages, each page with its checksum) past 2^kPageBits
/// entries. Entries: the chunk's address, and when filtered its stored size and filter mask.
struct FixedArray {
  bool filtered;
  uint64_t entries;
  int size_length;  // bytes of a filtered chunk's stored size
  size_t entry_size() const { return 8 + (filtered ? size_length + 4 : 0); }
  uint64_t page() const { return uint64_t{1} << kPageBits; }
  bool paged() const { return entries > page(); }
  uint64_t pages() const { return paged() ? (entries + page() - 1) / page() : 0; }
  static constexpr uint64_t kHeaderSize = 4 + 4 + 8 + 8 + 4;
  uint64_t block_size() const {
    const uint64_t prefix = 4 + 1 + 1 + 8 + (pages() + 7) / 8 + 4;
    return prefix + entries * entry_size() + pages() * 4;
  }
};

}  // namespace h5file

Hdf5FileWriter::Hdf5FileWriter(std::string path, std::vector<Hdf5DatasetLayout> layouts)
    : path_(std::move(path)) {
  for (auto& layout : layouts) {
    if (layout.name.empty() || layout.name.find('/') != std::string::npos || layout.name == ".") {
      fail(ErrorCode::kInvalidArgument, "{}: '{}' is not a dataset name", path_, layout.name);
    }
    if (!layout.chunk_shape.empty() && layout.chunk_shape.size() != layout.shape.size()) {
      fail(ErrorCode::kInvalidArgument, "{}: {}: chunk rank differs from the dataset's", path_,
           layout.name);
    }
    if (layout.chunk_shape.empty() && !layout.filters.empty()) {
      fail(ErrorCode::kInvalidArgument, "{}: {}: filters need chunks", path_, layout.name);
    }
    Dataset d;
    d.layout = std::move(layout);
    if (!d.layout.chunk_shape.empty()) {
      d.chunk_count = 1;
      for (size_t i = 0; i < d.layout.shape.size(); ++i) {
        const int64_t c = d.layout.chunk_shape[i];
        if (c <= 0) fail(ErrorCode::kInvalidArgument, "{}: chunk edge {}", path_, c);
        d.chunk_count *= static_cast<uint64_t>((d.layout.shape[i] + c - 1) / c);
      }
      d.chunk_bytes = static_cast<uint64_t>(element_count(d.layout.chunk_shape)) * 4;
      d.chunk_address.assign(d.chunk_count, h5file::kUndefinedAddress);
      d.chunk_size.assign(d.chunk_count, 0);
      d.chunk_mask.assign(d.chunk_count, 0);
    }
    datasets_.push_back(std::move(d));
  }
  // Lay out the metadata with the real sizes (addresses are fixed-size fields), then the data.
  root_address_ = h5file::kSuperblockSize;
  metadata();  // addresses not known yet: only its length (metadata_size_) is used here
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_errno(errno, "create", path_);
  uint64_t end = h5file::round_up(metadata_size_, h5file::kDataAlignment);
  for (Dataset& d : datasets_) {
    if (!d.layout.chunk_shape.empty()) continue;
    d.data_address = end;
    end += static_cast<uint64_t>(element_count(d.layout.shape)) * 4;
  }
  end_ = end;
  // Contiguous data is written in place by the caller: the file has its length from the start.
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    fail_errno(error, "resize", path_);
  }
}

Hdf5FileWriter::~Hdf5FileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void Hdf5FileWriter::write_contiguous(size_t d, uint64_t offset, std::span<const std::byte> bytes) {
  const Dataset& dataset = datasets_.at(d);
  const uint64_t size = static_cast<uint64_t>(element_count(dataset.layout.shape)) * 4;
  if (!dataset.layout.chunk_shape.empty() || offset > size || bytes.size() > size - offset) {
    fail(ErrorCode::kInvalidArgument, "{}: {}: {} bytes at {} of a contiguous dataset of {}", path_,
         dataset.layout.name, bytes.size(), offset, size);
  }
  h5file::pwrite_all(fd_, bytes.data(), bytes.size(), dataset.data_address + offset, path_);
}

void Hdf5FileWriter::append_chunk(size_t d, uint64_t linear, std::span<const std::byte> stored,
                                  uint32_t filter_mask) {
  Dataset& dataset = datasets_.at(d);
  if (linear >= dataset.chunk_count) {
    fail(ErrorCode::kInvalidArgument, "{}: {}: chunk {} of {}", path_, dataset.layout.name, linear,
         dataset.chunk_count);
  }
  if (dataset.layout.filters.empty() && stored.size() != dataset.chunk_bytes) {
    fail(ErrorCode::kInvalidArgument, "{}: {}: an unfiltered chunk of {} bytes, not {}", path_,
         dataset.layout.name, stored.size(), dataset.chunk_bytes);
  }
  const uint64_t address = end_.fetch_add(stored.size());
  h5file::pwrite_all(fd_, stored.data(), stored.size(), address, path_);
  // Each chunk has its own slot: no two threads write the same one.
  dataset.chunk_address[linear] = address;
  dataset.chunk_size[linear] = stored.size();
  dataset.chunk_mask[linear] = filter_mask;
}

std::vector<std::byte> Hdf5FileWriter::metadata() {
  // Object headers and indexes in file order: root group, datasets, fixed arrays. Their
  // addresses depend only on sizes, which do not depend on the addresses.
  uint64_t at = root_address_;
  std::vector<std::vector<std::byte>> parts;

  // The root group: link info (no dense storage), group info, one hard link per dataset.
  std::vector<uint64_t> header_addresses(datasets_.size()), index_addresses(datasets_.size());
  auto root = [&](const std::vector<uint64_t>& targets) {
    std::vector<h5file::Message> messages;
    h5file::Message info{0x02, 0, {}};
    info.data.u8(0);                           // version
    info.data.u8(0);                           // flags: no creation order
    info.data.u64(h5file::kUndefinedAddress);  // fractal heap
    info.data.u64(h5file::kUndefinedAddress);  // name index
    messages.push_back(std::move(info));
    h5file::Message group{0x0A, 0, {}};
    group.data.u8(0);
    group.data.u8(0);
    messages.push_back(std::move(group));
    for (size_t i = 0; i < datasets_.size(); ++i) {
      const std::string& name = datasets_[i].layout.name;
      h5file::Message link{0x06, 0, {}};
      link.data.u8(1);  // version
      const int length_bytes = name.size() < 256 ? 1 : name.size() < 65536 ? 2 : 4;
      link.data.u8(length_bytes == 1 ? 0 : length_bytes == 2 ? 1 : 2);  // hard link, ASCII
      link.data.uint(name.size(), length_bytes);
      link.data.text(name);
      link.data.u64(targets[i]);
      messages.push_back(std::move(link));
    }
    return h5file::object_header(messages);
  };

  auto dataset_header = [&](const Dataset& d, uint64_t index_address) {
    const auto& l = d.layout;
    const bool chunked = !l.chunk_shape.empty();
    std::vector<h5file::Message> messages;
    h5file::Message space{0x01, 0, {}};
    space.data.u8(2);  // version
    space.data.u8(l.shape.size());
    space.data.u8(0);                        // no maximum dimensions: they equal the current ones
    space.data.u8(l.shape.empty() ? 0 : 1);  // scalar or simple
    for (int64_t n : l.shape) space.data.u64(static_cast<uint64_t>(n));
    messages.push_back(std::move(space));

    h5file::Message type{0x03, 1, {}};  // IEEE float32 little-endian, as H5T_IEEE_F32LE
    type.data.u8(0x11);                 // version 1, class 1 (floating point)
    type.data.u8(0x20);  // little-endian, no padding, mantissa normalised (implied 1)
    type.data.u8(31);    // sign bit
    type.data.u8(0);
    type.data.u32(4);    // size
    type.data.u16(0);    // bit offset
    type.data.u16(32);   // precision
    type.data.u8(23);    // exponent location
    type.data.u8(8);     // exponent size
    type.data.u8(0);     // mantissa location
    type.data.u8(23);    // mantissa size
    type.data.u32(127);  // exponent bias
    messages.push_back(std::move(type));

    h5file::Message fill{0x05, 1, {}};
    fill.data.u8(3);  // version
    // Space allocated early (contiguous) or incrementally (chunked); fill never written; the
    // default fill value (zero).
    fill.data.u8((chunked ? 3 : 1) | (1 << 2));
    messages.push_back(std::move(fill));

    if (!l.filters.empty()) {
      h5file::Message pipeline{0x0B, 1, {}};
      pipeline.data.u8(2);  // version
      pipeline.data.u8(l.filters.size());
      for (const Hdf5Filter& f : l.filters) {
        pipeline.data.u16(static_cast<uint64_t>(f.id));
        if (f.id >= 256) pipeline.data.u16(0);  // name length: no name
        pipeline.data.u16(1);                   // optional, as H5Z_FLAG_OPTIONAL
        pipeline.data.u16(f.client_data.size());
        for (unsigned v : f.client_data) pipeline.data.u32(v);
      }
      messages.push_back(std::move(pipeline));
    }

    h5file::Message layout{0x08, 0, {}};
    if (!chunked) {
      layout.data.u8(3);  // version
      layout.data.u8(1);  // contiguous
      layout.data.u64(d.data_address);
      layout.data.u64(static_cast<uint64_t>(element_count(l.shape)) * 4);
    } else {
      layout.data.u8(4);  // version
      layout.data.u8(2);  // chunked
      layout.data.u8(0);  // flags
      layout.data.u8(l.shape.size() + 1);
      uint64_t widest = 4;
      for (int64_t c : l.chunk_shape) widest = std::max(widest, static_cast<uint64_t>(c));
      const int per_dim = h5file::encoded_length(widest);
      layout.data.u8(per_dim);
      for (int64_t c : l.chunk_shape) layout.data.uint(static_cast<uint64_t>(c), per_dim);
      layout.data.uint(4, per_dim);  // the element size, the last "dimension"
      layout.data.u8(3);             // fixed array index
      layout.data.u8(h5file::kPageBits);
      layout.data.u64(index_address);
    }
    messages.push_back(std::move(layout));
    return h5file::object_header(messages);
  };

  auto fixed_array_of = [](const Dataset& d) {
    return h5file::FixedArray{!d.layout.filters.empty(), d.chunk_count,
                              std::min(8, 1 + h5file::encoded_length(d.chunk_bytes))};
  };

  // Pass 1: sizes and addresses.
  at += root(header_addresses).size();
  for (size_t i = 0; i < datasets_.size(); ++i) {
    header_addresses[i] = at;
    at += dataset_header(datasets_[i], 0).size();
  }
  for (size_t i = 0; i < datasets_.size(); ++i) {
    if (datasets_[i].layout.chunk_shape.empty()) continue;
    index_addresses[i] = at;
    const h5file::FixedArray fa = fixed_array_of(datasets_[i]);
    at += h5file::FixedArray::kHeaderSize + fa.block_size();
  }
  metadata_size_ = at;

  // Pass 2: the bytes.
  h5file::Encoder out;
  out.text("\x89HDF\r\n\x1a\n");
  out.u8(3);                           // superblock version
  out.u8(8);                           // size of offsets
  out.u8(8);                           // size of lengths
  out.u8(0);                           // file consistency flags
  out.u64(0);                          // base address
  out.u64(h5file::kUndefinedAddress);  // superblock extension
  out.u64(std::max(end_.load(), at));  // end of file
  out.u64(root_address_);
  out.checksum();
  out.append(root(header_addresses));
  for (size_t i = 0; i < datasets_.size(); ++i) {
    out.append(dataset_header(datasets_[i], index_addresses[i]));
  }
  for (size_t i = 0; i < datasets_.size(); ++i) {
    const Dataset& d = datasets_[i];
    if (d.layout.chunk_shape.empty()) continue;
    const h5file::FixedArray fa = fixed_array_of(d);
    const uint64_t block = index_addresses[i] + h5file::FixedArray::kHeaderSize;
    size_t start = out.size();
    out.text("FAHD");
    out.u8(0);  // version
    out.u8(fa.filtered ? 1 : 0);
    out.u8(fa.entry_size());
    out.u8(h5file::kPageBits);
    out.u64(fa.entries);
    out.u64(block);
    out.checksum(start);

    auto entries = [&](uint64_t first, uint64_t n) {
      for (uint64_t k = first; k < first + n; ++k) {
        const uint64_t address =
            d.chunk_address.empty() ? h5file::kUndefinedAddress : d.chunk_address[k];
        out.u64(address);
        if (fa.filtered) {
          out.uint(d.chunk_size.empty() ? 0 : d.chunk_size[k], fa.size_length);
          out.u32(d.chunk_mask.empty() ? 0 : d.chunk_mask[k]);
        }
      }
    };
    start = out.size();
    out.text("FADB");
    out.u8(0);
    out.u8(fa.filtered ? 1 : 0);
    out.u64(index_addresses[i]);
    if (!fa.paged()) {
      entries(0, fa.entries);
      out.checksum(start);
      continue;
    }
    // Every page is written: a bitmap of ones, most significant bit first.
    for (uint64_t byte = 0; byte < (fa.pages() + 7) / 8; ++byte) {
      const uint64_t bits = std::min<uint64_t>(8, fa.pages() - byte * 8);
      out.u8((0xff00u >> bits) & 0xffu);
    }
    out.checksum(start);
    for (uint64_t p = 0; p < fa.pages(); ++p) {
      start = out.size();
      entries(p * fa.page(), std::min(fa.page(), fa.entries - p * fa.page()));
      out.checksum(start);
    }
  }
  if (out.size() != at) {
    fail(ErrorCode::kInternal, "{}: HDF5 metadata of {} bytes, laid out as {}", path_, out.size(),
         at);
  }
  return std::move(out.bytes());
}

void Hdf5FileWriter::finish() {
  if (finished_) return;
  for (const Dataset& d : datasets_) {
    for (uint64_t k = 0; k < d.chunk_address.size(); ++k) {
      if (d.chunk_address[k] == h5file::kUndefinedAddress) {
        fail(ErrorCode::kInternal, "{}: {}: chunk {} was never written", path_, d.layout.name, k);
      }
    }
  }
  const auto bytes = metadata();
  h5file::pwrite_all(fd_, bytes.data(), bytes.size(), 0, path_);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail_errno(errno, "close", path_);
  }
  fd_ = -1;
  finished_ = true;
}

}  // namespace chute::synth
