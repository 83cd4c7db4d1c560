// The Python exception classes of chute and the one translator that maps chute::Error onto them.
// Every class derives from chute.Error and from the built-in exception that fits the code, so
// callers may catch either (`except chute.CorruptDataError`, `except ValueError`).

#include <Python.h>

#include <array>
#include <string_view>

#include "bindings.h"
#include "chute/util/error.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

struct ErrorClass {
  ErrorCode code;
  const char* name;  // the attribute of the chute module
  PyObject* builtin_base;
  const char* doc;
};

// The one table: error code -> Python class name and its built-in base. Indexed by ErrorCode.
std::array<ErrorClass, 12> error_table() {
  return {{
      {ErrorCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError,
       "A bad request or option from the caller."},
      {ErrorCode::kInvalidMetadata, "InvalidMetadataError", PyExc_ValueError,
       "Malformed or inconsistent array or group metadata."},
      {ErrorCode::kUnsupported, "UnsupportedError", PyExc_ValueError,
       "An unknown codec, data type or feature."},
      {ErrorCode::kCorruptData, "CorruptDataError", PyExc_ValueError,
       "A truncated or corrupt chunk, a checksum or size mismatch."},
      {ErrorCode::kNotFound, "NotFoundError", PyExc_FileNotFoundError,
       "A missing file, array or group."},
      {ErrorCode::kPermissionDenied, "PermissionDeniedError", PyExc_PermissionError,
       "A file that cannot be read for lack of permission."},
      {ErrorCode::kIoError, "StorageError", PyExc_OSError,
       "Any other operating-system error while reading storage."},
      {ErrorCode::kOutOfRange, "OutOfRangeError", PyExc_IndexError,
       "An index or box outside the array."},
      {ErrorCode::kCancelled, "CancelledError", nullptr, "The pipeline was stopped."},
      {ErrorCode::kInternal, "InternalError", PyExc_RuntimeError, "A bug in chute."},
      {ErrorCode::kTimeout, "ReadTimeoutError", PyExc_TimeoutError,
       "No batch within the Loader's timeout (a read stuck on storage)."},
      {ErrorCode::kUnavailable, "StoreUnavailableError", PyExc_ConnectionError,
       "A store still failing after its retries (HTTP 5xx or 429, a reset or stalled stream)."},
  }};
}

// Owned by the module for the life of the process (exception classes are never unloaded).
PyObject* g_base_class = nullptr;
std::array<PyObject*, 12> g_classes{};

PyObject* new_class(const char* name, PyObject* bases, const char* doc) {
  std::string qualified = std::string("chute.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (cls == nullptr) throw nb::python_error();
  return cls;
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    size_t index = static_cast<size_t>(e.code());
    PyObject* cls = index < g_classes.size() ? g_classes[index] : g_base_class;
    // Messages may quote bytes from files or paths that are not UTF-8: keep them visible
    // (as \xNN) rather than losing the whole message to a decoding error.
    const std::string_view message = e.what();
    PyObject* text = PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()),
                                          "backslashreplace");
    if (text == nullptr) {
      PyErr_Clear();
      PyErr_SetString(cls, "(unprintable message)");
      return;
    }
    PyErr_SetObject(cls, text);
    Py_DECREF(text);
  }
}

}  // namespace

void bind_errors(nb::module_& m) {
  g_base_class = new_class("Error", PyExc_Exception,
                           "Base class of every error raised by chute. Subclasses also derive "
                           "from the built-in exception that fits (ValueError, OSError, ...).");
  m.attr("Error") = nb::handle(g_base_class);
  for (const ErrorClass& entry : error_table()) {
    PyObject* bases = entry.builtin_base == nullptr
                          ? PyTuple_Pack(1, g_base_class)
                          : PyTuple_Pack(2, g_base_class, entry.builtin_base);
    if (bases == nullptr) throw nb::python_error();
    PyObject* cls = new_class(entry.name, bases, entry.doc);
    Py_DECREF(bases);
    g_classes[static_cast<size_t>(entry.code)] = cls;
    m.attr(entry.name) = nb::handle(cls);
  }
  nb::register_exception_translator(&translate);
}

}  // namespace chute::python
