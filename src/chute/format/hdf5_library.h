#pragma once
// Calling libhdf5 safely, for `make-dataset volume`'s HDF5 writer (synth/hdf5_writer.cc) alone:
// built into the harness, never into the library, which reads HDF5 with its own reader. Debian's
// serial build is not thread-safe, so every call holds one lock; handles close themselves; the
// library's error stack becomes the text of a chute Error instead of being printed.

#include <hdf5.h>

#include <mutex>
#include <string>
#include <utility>

namespace chute::hdf5 {

/// The lock held around every libhdf5 call.
std::unique_lock<std::recursive_mutex> lock_library();

/// An owned hid_t, closed with H5Idec_ref.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id) : id_(id) {}
  ~Handle();
  Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// Turns off libhdf5's printing of errors (once) and returns the messages of the current error
/// stack, innermost last, joined with "; " (empty when none).
std::string take_error_stack();
void silence_errors();

/// Throws an Error with `code` and "<what>: <the library's messages>" when `id` < 0, else
/// returns it owned.
Handle check(hid_t id, int code, const std::string& what);
/// The same for herr_t results.
void check_status(herr_t status, int code, const std::string& what);

}  // namespace chute::hdf5
