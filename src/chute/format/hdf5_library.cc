#include "chute/format/hdf5_library.h"

#include "chute/util/error.h"

namespace chute::hdf5 {

std::unique_lock<std::recursive_mutex> lock_library() {
  static std::recursive_mutex mutex;
  return std::unique_lock(mutex);
}

Handle::~Handle() {
  if (id_ >= 0) {
    auto lock = lock_library();
    H5Idec_ref(id_);
  }
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    Handle dropped(std::exchange(id_, std::exchange(other.id_, H5I_INVALID_HID)));
  }
  return *this;
}

void silence_errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

std::string take_error_stack() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* error, void* data) -> herr_t {
        auto* out = static_cast<std::string*>(data);
        if (error->desc && *error->desc) {
          if (!out->empty()) *out += "; ";
          *out += error->desc;
        }
        return 0;
      },
      &text);
  H5Eclear2(H5E_DEFAULT);
  return text;
}

Handle check(hid_t id, int code, const std::string& what) {
  if (id < 0) {
    const std::string stack = take_error_stack();
    fail(static_cast<ErrorCode>(code), "{}{}{}", what, stack.empty() ? "" : ": ", stack);
  }
  return Handle(id);
}

void check_status(herr_t status, int code, const std::string& what) {
  if (status < 0) {
    const std::string stack = take_error_stack();
    fail(static_cast<ErrorCode>(code), "{}{}{}", what, stack.empty() ? "" : ": ", stack);
  }
}

}  // namespace chute::hdf5
