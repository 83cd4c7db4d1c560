#pragma once
// A Zarr reference store (kerchunk, VirtualiZarr): every key is either inline bytes or a byte
// range of another file, local or behind a URL. Reads of referenced ranges are forwarded, a
// batch at a time, to the stores of the target files (FileStore, HttpStore, ...), so they are
// coalesced, kept in flight and cached exactly as reads of those files are.
//
// A key the references do not hold is missing, as in any Zarr store: a chunk there reads as
// the array's fill value. A reference whose target file is missing, or whose range runs past
// the target's end, is an error naming the key and the target, never fill.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chute/store/store.h"

namespace chute {

/// One key of a reference set.
struct Reference {
  std::string key;
  /// Inline value (used when `url` is empty).
  std::vector<std::byte> data;
  /// The target file: a local path (absolute, or relative to the reference file's folder) or
  /// a URL; "file://" is stripped.
  std::string url;
  uint64_t offset = 0;
  std::optional<uint64_t> length;  // nullopt: the whole target file ([url] references)
};

class ReferenceStore final : public Store {
 public:
  /// `name` is the reference file (for messages); relative target paths resolve against
  /// `base_dir` ("" : the working directory). Target stores are opened lazily, one per folder.
  ReferenceStore(std::vector<Reference> references, std::string name, std::string base_dir);

  std::optional<uint64_t> size(std::string_view key) const override;
  bool read(std::string_view key, ByteBuffer& out) const override;
  bool read_range(std::string_view key, uint64_t offset, std::span<std::byte> out) const override;
  /// Inline values are served at once; referenced ranges go to their targets' stores as one
  /// batch per store.
  void submit(std::span<const ReadRequest> requests, const ReadCallback& done) const override;
  int preferred_concurrency() const override { return 32; }
  std::vector<std::string> list(std::string_view prefix) const override;
  std::string describe() const override { return name_; }

  size_t num_references() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<std::byte> data;
    int32_t target = -1;  // index into targets_, -1 for inline
    uint64_t offset = 0;
    std::optional<uint64_t> length;
  };
  struct Target {
    std::string url;   // as resolved (for messages)
    std::string dir;   // the folder (or URL prefix) whose store holds it
    std::string file;  // its key in that store
  };
  const Entry* find(std::string_view key) const;
  /// The store of target `t` (opened on first use; thread-safe).
  const Store& target_store(int32_t t) const;
  /// Rewrites `error` as "reference '<key>' -> '<target>' ...".
  std::exception_ptr name_target(std::string_view key, const Entry& entry,
                                 std::exception_ptr error) const;
  [[noreturn]] void fail_missing_target(std::string_view key, const Entry& entry) const;

  std::string name_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<Target> targets_;
  struct Stores;
  std::shared_ptr<Stores> stores_;
};

/// Parses a kerchunk JSON reference document, version 0 ({key: value}) or 1 ({"version": 1,
/// "templates", "gen", "refs"}), into references. Values: a string (inline text; "base64:"
/// prefix for bytes), a JSON object (inline, serialised), [url] or [url, offset, length]. In
/// version 1, "{{name}}" in a URL is a template, and "gen" entries expand over their
/// "dimensions" with integer expressions ("{{(i + 90) * 1000}}": + - * / // % and brackets).
/// Throws kInvalidMetadata naming `name` and the key for anything else, kUnsupported for
/// another version.
std::vector<Reference> parse_json_references(std::string_view text, const std::string& name);

/// Opens `location` as a reference store: a store registered under it (register_reference_set),
/// else a JSON reference file read from a local path or a URL. Throws kNotFound when the file
/// does not exist, kInvalidMetadata naming the file when it is JSON but no reference set.
StorePtr open_reference_store(const std::string& location);

/// True when `location` names a reference set chute can open: a registered one, or a path or
/// URL ending in ".json" (a local one must be a regular file).
bool is_reference_location(const std::string& location);

/// Registers a reference set built elsewhere (the Python layer reads Parquet reference sets
/// with pyarrow) under `location`, replacing any earlier one.
void register_reference_set(const std::string& location, StorePtr store);

/// True when `path` is a local folder holding a kerchunk Parquet reference set (a .zmetadata
/// with "record_size"); chute's core cannot read Parquet itself.
bool is_parquet_reference_folder(const std::string& path);

}  // namespace chute
