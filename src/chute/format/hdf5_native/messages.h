#pragma once
// The object header messages a reader needs, decoded into plain structs from their bytes alone
// (no I/O), so each decoder is tested and fuzzed by itself. Layout of each message: the HDF5
// File Format Specification, section IV.A.2.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chute/format/hdf5_native/bytes.h"

namespace chute::h5native {

enum MessageType : uint16_t {
  kNilMessage = 0x00,
  kDataspaceMessage = 0x01,
  kLinkInfoMessage = 0x02,
  kDatatypeMessage = 0x03,
  kFillValueOldMessage = 0x04,
  kFillValueMessage = 0x05,
  kLinkMessage = 0x06,
  kExternalFilesMessage = 0x07,
  kLayoutMessage = 0x08,
  kGroupInfoMessage = 0x0A,
  kFilterPipelineMessage = 0x0B,
  kAttributeMessage = 0x0C,
  kContinuationMessage = 0x10,
  kSymbolTableMessage = 0x11,
  kAttributeInfoMessage = 0x15,
};

struct Datatype {
  enum class Class : uint8_t {
    kFixedPoint = 0,
    kFloat = 1,
    kTime = 2,
    kString = 3,
    kBitfield = 4,
    kOpaque = 5,
    kCompound = 6,
    kReference = 7,
    kEnum = 8,
    kVarLen = 9,
    kArray = 10,
    kComplex = 11,
  };
  Class cls = Class::kFixedPoint;
  int version = 1;
  uint32_t size = 0;  // bytes of one element
  bool big_endian = false;
  bool is_signed = false;
  uint16_t bit_offset = 0;
  uint16_t precision = 0;
  // Floating point.
  uint8_t sign_location = 0;
  uint8_t exponent_location = 0, exponent_size = 0, mantissa_location = 0, mantissa_size = 0;
  uint32_t exponent_bias = 0;
  // Strings (fixed, or variable-length with vlen_string): padding 0 null-terminated, 1
  // null-padded, 2 space-padded; charset 0 ASCII, 1 UTF-8.
  int padding = 0;
  int charset = 0;
  bool vlen_string = false;
  uint32_t members = 0;    // compound and enum
  int reference_type = 0;  // reference: 0 object (an address), 1 dataset region, 2+ newer kinds
  std::vector<uint32_t> array_dims;
  std::shared_ptr<const Datatype> base;  // enum, variable-length sequence, array, complex
  struct Field {
    std::string name;
    uint32_t offset = 0;
    std::shared_ptr<const Datatype> type;
  };
  std::vector<Field> fields;            // compound: its members
  std::vector<std::string> enum_names;  // enum: member names, in order
  std::vector<std::byte> enum_values;   // enum: their values, members * base->size bytes

  /// Numeric classes a reader turns into NumPy numbers (through enum to its base).
  bool is_numeric() const;
  /// The NumPy type string: "<f4", ">i2", "|u1", "|S10", "O" (variable-length), "|V12", ...
  std::string numpy() const;
  /// "fixed-point", "compound", ...
  std::string class_name() const;
};

/// Decodes a datatype message (recursively for enum, array and variable-length bases).
Datatype decode_datatype(Cursor& in, int depth = 0);

struct Dataspace {
  enum class Kind { kScalar, kSimple, kNull };
  Kind kind = Kind::kScalar;
  std::vector<uint64_t> dims;
  std::vector<uint64_t> maxdims;  // kUndefined: unlimited
  /// Elements: 1 for a scalar, 0 for null.
  uint64_t count() const;
};
Dataspace decode_dataspace(Cursor& in);

struct FillValue {
  int version = 0;
  int alloc_time = 0;  // 1 early, 2 late, 3 incremental
  int write_time = 0;  // 0 on allocation, 1 never, 2 if set
  bool defined = false;
  std::optional<std::vector<std::byte>> value;  // none: the default (zeros)
};
FillValue decode_fill_value(Cursor& in);
FillValue decode_old_fill_value(Cursor& in);

struct Filter {
  uint16_t id = 0;
  std::string name;
  uint16_t flags = 0;  // bit 0: optional
  std::vector<uint32_t> client_data;
};
std::vector<Filter> decode_filter_pipeline(Cursor& in);

struct Layout {
  enum class Class { kCompact = 0, kContiguous = 1, kChunked = 2, kVirtual = 3 };
  enum class Index {
    kBtree1 = 0,
    kSingle = 1,
    kImplicit = 2,
    kFixedArray = 3,
    kExtensibleArray = 4,
    kBtree2 = 5
  };
  int version = 0;
  Class cls = Class::kContiguous;
  std::vector<std::byte> compact;  // kCompact: the data
  size_t compact_at = 0;           // kCompact: where the data starts in the message
  uint64_t address = kUndefined;   // contiguous data, chunk index, or virtual heap collection
  uint64_t size = 0;               // kContiguous: bytes
  std::vector<uint64_t> chunk;     // kChunked: chunk dims (rank entries)
  uint64_t element_size = 0;       // kChunked: the last "dimension" of the message
  Index index = Index::kBtree1;
  int flags = 0;  // bit 0: partial edge chunks unfiltered; bit 1: single chunk filtered
  uint64_t single_filtered_size = 0;
  uint32_t single_filter_mask = 0;
  int page_bits = 0;  // fixed array, extensible array data block pages
  int ea_max_bits = 0, ea_index_elements = 0, ea_min_pointers = 0, ea_min_elements = 0;
  uint32_t bt2_node_size = 0;
  int bt2_split = 0, bt2_merge = 0;
  uint32_t virtual_index = 0;  // kVirtual: object index in the global heap collection

  /// Bytes of one unfiltered chunk.
  uint64_t chunk_bytes() const;
};
Layout decode_layout(Cursor& in);

struct Link {
  enum class Kind { kHard, kSoft, kExternal, kUserDefined };
  std::string name;
  Kind kind = Kind::kHard;
  uint64_t address = kUndefined;  // kHard
  std::string target;             // kSoft: path; kExternal: object path in `file`
  std::string file;               // kExternal
  std::optional<int64_t> creation_order;
};
Link decode_link(Cursor& in);

/// Where a group's (or object's attributes') dense storage lives.
struct DenseInfo {
  bool creation_order_tracked = false;
  bool creation_order_indexed = false;
  uint64_t heap = kUndefined;        // fractal heap
  uint64_t name_index = kUndefined;  // v2 B-tree by name hash
  uint64_t order_index = kUndefined;
};
DenseInfo decode_link_info(Cursor& in);
DenseInfo decode_attribute_info(Cursor& in);

struct SymbolTableInfo {
  uint64_t btree = kUndefined;
  uint64_t heap = kUndefined;
};
SymbolTableInfo decode_symbol_table(Cursor& in);

struct Attribute {
  std::string name;
  Datatype type;
  Dataspace space;
  std::vector<std::byte> data;  // raw elements as stored (variable-length: heap references)
  std::optional<int64_t> creation_order;
  uint64_t shared_type_address = kUndefined;  // a committed datatype, resolved by the caller
};
Attribute decode_attribute(Cursor& in);

/// The committed-datatype address a shared message points at, or kUnsupported for messages
/// shared through the file's shared-message heap.
uint64_t decode_shared_address(Cursor& in);

}  // namespace chute::h5native
