// The option structs as Python classes, from their field tables (chute/util/option_table.h):
// LoaderOptions(batch_size=16, ...) takes keywords only, converts and checks each value in C++
// (InvalidArgumentError naming the option as Python spells it: 1.5 is not an integer, True is
// not a count, NaN is not a number), and exposes every field as a property. _fields() describes
// the table to scripts/gen_options.py, which writes the Python signatures, docstrings and
// docs/reference/options.md from it.

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <deque>
#include <string>
#include <type_traits>

#include "bindings.h"
#include "chute/dataset/crop_dataset.h"
#include "chute/dataset/window_dataset.h"
#include "chute/loader.h"
#include "chute/store/http/http_client.h"
#include "chute/store/s3_store.h"
#include "chute/util/error.h"
#include "chute/util/option_table.h"

namespace nb = nanobind;

namespace chute::python {
namespace {

std::string py_repr(nb::handle value) { return nb::repr(value).c_str(); }

bool is_bool(nb::handle value) {
  if (PyBool_Check(value.ptr())) return true;
  const std::string type = Py_TYPE(value.ptr())->tp_name;
  return type == "numpy.bool" || type == "numpy.bool_";
}

[[noreturn]] void wrong_type(std::string_view owner, std::string_view name, std::string_view what,
                             nb::handle value) {
  fail(ErrorCode::kInvalidArgument, "{}: {} must be {}, got {}", owner, name, what, py_repr(value));
}

void check_limits(std::string_view owner, std::string_view name, long double v,
                  const OptionCheck& c, nb::handle value) {
  if (v >= c.low && v <= c.high) return;
  fail(ErrorCode::kInvalidArgument, "{}: {} = {} is outside [{}, {}]{}", owner, name,
       py_repr(value), detail::limit_text(c.low), detail::limit_text(c.high),
       c.none.empty() ? std::string() : fmt::format(" or None ({})", c.none));
}

/// An integer (anything with __index__ but a bool) in the field's range.
template <typename T>
T to_integer(std::string_view owner, std::string_view name, nb::handle value,
             const OptionCheck& c) {
  if (is_bool(value) || !PyIndex_Check(value.ptr())) {
    wrong_type(owner, name, "an integer", value);
  }
  nb::object index = nb::steal(PyNumber_Index(value.ptr()));
  if (!index.is_valid()) throw nb::python_error();
  int overflow = 0;
  const long long small = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  long double v = static_cast<long double>(small);
  if (overflow > 0) {
    const unsigned long long big = PyLong_AsUnsignedLongLong(index.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      v = std::numeric_limits<long double>::infinity();
    } else {
      v = static_cast<long double>(big);
    }
  } else if (overflow < 0) {
    v = -std::numeric_limits<long double>::infinity();
  }
  const long double lowest = static_cast<long double>(std::numeric_limits<T>::lowest());
  const long double highest = static_cast<long double>(std::numeric_limits<T>::max());
  OptionCheck limits = c;
  limits.low = std::max(c.low, lowest);
  limits.high = std::min(c.high, highest);
  check_limits(owner, name, v, limits, value);
  return overflow > 0 ? static_cast<T>(PyLong_AsUnsignedLongLong(index.ptr()))
                      : static_cast<T>(small);
}

/// A finite real number (int, float, NumPy number; not a bool, not a str) in the field's range.
double to_number(std::string_view owner, std::string_view name, nb::handle value,
                 const OptionCheck& c) {
  PyObject* p = value.ptr();
  if (is_bool(value) || PyUnicode_Check(p) || PyBytes_Check(p) ||
      !(PyFloat_Check(p) || PyLong_Check(p) || PyIndex_Check(p) ||
        PyObject_HasAttrString(p, "__float__"))) {
    wrong_type(owner, name, "a number", value);
  }
  const double v = PyFloat_AsDouble(p);
  if (v == -1.0 && PyErr_Occurred()) throw nb::python_error();
  if (!std::isfinite(v)) wrong_type(owner, name, "a finite number", value);
  check_limits(owner, name, v, c, value);
  return v;
}

std::string to_text(std::string_view owner, std::string_view name, nb::handle value,
                    const OptionCheck& c) {
  std::string text;
  if (PyUnicode_Check(value.ptr())) {
    text = nb::cast<std::string>(value);
  } else if (c.path &&
             (PyBytes_Check(value.ptr()) || PyObject_HasAttrString(value.ptr(), "__fspath__"))) {
    // A path need not be valid UTF-8 on Linux: its bytes as the file system has them.
    nb::object encoded = nb::module_::import_("os").attr("fsencode")(value);
    text.assign(PyBytes_AsString(encoded.ptr()), static_cast<size_t>(PyBytes_Size(encoded.ptr())));
  } else {
    wrong_type(owner, name, c.path ? "a path (str or os.PathLike)" : "a str", value);
  }
  detail::check_choice(owner, name, text, c);
  return text;
}

template <typename T>
T to_value(std::string_view owner, std::string_view name, nb::handle value, const OptionCheck& c) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!is_bool(value)) wrong_type(owner, name, "True or False", value);
    return PyObject_IsTrue(value.ptr()) == 1;
  } else if constexpr (std::is_integral_v<T>) {
    return to_integer<T>(owner, name, value, c);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(to_number(owner, name, value, c));
  } else {
    return to_text(owner, name, value, c);
  }
}

template <typename T>
std::vector<T> to_list(std::string_view owner, std::string_view name, nb::handle value,
                       const OptionCheck& c, std::string_view what) {
  PyObject* p = value.ptr();
  if (PyUnicode_Check(p) || PyBytes_Check(p) || !PyObject_HasAttrString(p, "__iter__")) {
    wrong_type(owner, name, fmt::format("a list of {}", what), value);
  }
  std::vector<T> out;
  for (nb::handle item : value) {
    out.push_back(to_value<T>(owner, fmt::format("{}[{}]", name, out.size()), item, c));
  }
  if (c.non_empty && out.empty()) {
    fail(ErrorCode::kInvalidArgument, "{}: {} must not be empty", owner, name);
  }
  return out;
}

template <typename T>
constexpr const char* list_item_name() {
  if constexpr (std::is_same_v<T, std::string>) return "str";
  if constexpr (std::is_floating_point_v<T>) return "numbers";
  return "integers";
}

/// Sets field `f` of `options` from a Python value, checked; None is the field's default where
/// the table gives it a meaning.
template <typename S>
void set_field(std::string_view owner, const OptionField<S>& f, S& options, nb::handle value) {
  const OptionCheck& c = f.check;
  std::visit(
      [&](const auto& member) {
        using M = std::decay_t<decltype(member)>;
        if constexpr (std::is_same_v<M, OptionText<S>>) {
          if (value.is_none() && !c.none.empty()) {
            member.set(options, member.get(option_defaults<S>()));
          } else {
            member.set(options, to_text(owner, f.name, value, c));
          }
        } else {
          using T = std::decay_t<decltype(options.*member)>;
          if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
            if (value.is_none()) {
              options.*member = std::nullopt;
            } else {
              options.*member = to_integer<int64_t>(owner, f.name, value, c);
            }
          } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
            if (value.is_none()) {
              options.*member = std::nullopt;
            } else {
              options.*member = to_value<bool>(owner, f.name, value, c);
            }
          } else if (value.is_none()) {
            if (c.none.empty()) {
              fail(ErrorCode::kInvalidArgument, "{}: {} must not be None", owner, f.name);
            }
            options.*member = option_defaults<S>().*member;
          } else if constexpr (requires { typename T::value_type; } &&
                               !std::is_same_v<T, std::string>) {
            using V = typename T::value_type;
            options.*member = to_list<V>(owner, f.name, value, c, list_item_name<V>());
          } else {
            options.*member = to_value<T>(owner, f.name, value, c);
          }
        }
      },
      f.member);
}

template <typename S>
nb::object get_field(const OptionField<S>& f, const S& options, bool none_for_default) {
  return std::visit(
      [&](const auto& member) -> nb::object {
        using M = std::decay_t<decltype(member)>;
        if constexpr (std::is_same_v<M, OptionText<S>>) {
          return nb::cast(member.get(options));
        } else {
          const auto& value = options.*member;
          using T = std::decay_t<decltype(value)>;
          if (none_for_default && f.check.default_none && value == option_defaults<S>().*member) {
            return nb::none();
          }
          if constexpr (std::is_same_v<T, std::optional<int64_t>> ||
                        std::is_same_v<T, std::optional<bool>>) {
            return value ? nb::cast(*value) : nb::none();
          } else if constexpr (requires { typename T::value_type; } &&
                               !std::is_same_v<T, std::string>) {
            nb::list items;
            for (const auto& item : value) items.append(nb::cast(item));
            return nb::tuple(items);
          } else {
            return nb::cast(value);
          }
        }
      },
      f.member);
}

/// The Python annotation of field `f`.
template <typename S>
std::string python_type(const OptionField<S>& f) {
  const OptionCheck& c = f.check;
  std::string type(c.python_type);
  if (!type.empty()) return !c.none.empty() ? type + " | None" : type;
  if (!c.choices.empty()) {
    type = fmt::format("Literal[\"{}\"]", fmt::join(c.choices, "\", \""));
  }
  std::visit(
      [&](const auto& member) {
        using M = std::decay_t<decltype(member)>;
        if constexpr (!std::is_same_v<M, OptionText<S>>) {
          using T = std::decay_t<decltype(S{}.*member)>;
          std::string plain;
          if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::optional<bool>>) {
            plain = "bool";
          } else if constexpr (std::is_same_v<T, std::string>) {
            plain = c.path ? "str | os.PathLike[str]" : "str";
          } else if constexpr (std::is_floating_point_v<T>) {
            plain = "float";
          } else if constexpr (std::is_integral_v<T> || std::is_same_v<T, std::optional<int64_t>>) {
            plain = "int";
          } else {
            using V = typename T::value_type;
            plain = std::is_same_v<V, std::string> ? "Sequence[str]"
                    : std::is_floating_point_v<V>  ? "Sequence[float]"
                                                   : "Sequence[int]";
          }
          if (type.empty()) type = plain;
        }
      },
      f.member);
  if (!c.none.empty()) type += " | None";
  return type;
}

/// `type` with qualified names, which the stub generator turns into imports.
std::string qualified(std::string type) {
  for (const auto& [plain, full] :
       {std::pair<std::string, std::string>{"Literal[", "typing.Literal["},
        {"Sequence[", "collections.abc.Sequence["}}) {
    for (size_t at = type.find(plain); at != std::string::npos;
         at = type.find(plain, at + full.size())) {
      if (at > 0 && type[at - 1] == '.') continue;
      type.replace(at, plain.size(), full);
    }
  }
  return type;
}

/// Signature strings for the stubs, kept for the life of the module.
const char* keep(std::string text) {
  static std::deque<std::string> kept;
  return kept.emplace_back(std::move(text)).c_str();
}

/// Sets the fields of `options` named by the keywords, each checked; an unknown name is an
/// error listing the known ones.
template <typename S>
void set_keywords(std::string_view owner, S& options, const nb::kwargs& keywords) {
  for (auto [key, value] : keywords) {
    const std::string keyword = nb::cast<std::string>(key);
    const OptionField<S>* field = find_field<S>(keyword);
    if (field == nullptr) {
      std::vector<std::string_view> known;
      for (const OptionField<S>& f : S::fields()) {
        if (!f.check.internal) known.push_back(f.name);
      }
      fail(ErrorCode::kInvalidArgument, "{}: unknown option '{}' (known: {})", owner, keyword,
           fmt::join(known, ", "));
    }
    set_field(owner, *field, options, value);
  }
}

/// The fields as a dict; `given_only`: only those not at a default that None stands for.
template <typename S>
nb::dict fields_dict(const S& options, bool given_only) {
  nb::dict out;
  for (const OptionField<S>& f : S::fields()) {
    if (f.check.internal) continue;
    nb::object value = get_field(f, options, true);
    if (given_only && value.is_none()) continue;
    out[f.name.data()] = value;
  }
  return out;
}

template <typename S>
void bind_options(nb::module_& m, const char* name, const char* owner, const char* doc) {
  nb::class_<S> cls(m, name, doc);
  // The keywords with their types and defaults, so that type checkers see them.
  std::string init = "def __init__(self, *";
  for (const OptionField<S>& f : S::fields()) {
    init += fmt::format(", {}: {} = {}", f.name, qualified(python_type(f)),
                        py_repr(get_field(f, option_defaults<S>(), true)));
  }
  cls.def(
      "__init__",
      [owner](S* self, nb::kwargs options) {
        new (self) S();
        set_keywords(owner, *self, options);
      },
      nb::sig(keep(init + ") -> None")),
      "Keyword arguments: the options by name (see _fields()); each is checked here.");
  for (const OptionField<S>& field : S::fields()) {
    const OptionField<S>* f = &field;
    const std::string type = qualified(python_type(field));
    cls.def_prop_rw(
        field.name.data(), [f](const S& s) { return get_field(*f, s, true); },
        [f, owner](S& s, nb::handle value) { set_field(owner, *f, s, value); },
        nb::for_getter(nb::sig(keep(fmt::format("def {}(self, /) -> {}", field.name, type)))),
        nb::for_setter(
            nb::sig(keep(fmt::format("def {}(self, value: {}, /) -> None", field.name, type)))),
        field.help.data());
  }
  if constexpr (requires(const S& s) { validate(s); }) {
    cls.def(
        "validate", [](const S& s) { validate(s); },
        "Checks the fields together (each was checked when set): what the core checks first.");
  }
  cls.def("__repr__", [name](const S& s) {
    std::string out = std::string(name) + "(";
    bool first = true;
    for (const OptionField<S>& f : S::fields()) {
      if (f.check.internal) continue;
      out += fmt::format("{}{}={}", first ? "" : ", ", f.name, py_repr(get_field(f, s, true)));
      first = false;
    }
    return out + ")";
  });
  cls.def_static(
      "_fields",
      []() {
        nb::list out;
        for (const OptionField<S>& f : S::fields()) {
          const OptionCheck& c = f.check;
          nb::dict d;
          d["name"] = std::string(f.name);
          d["type"] = python_type(f);
          d["default"] = get_field(f, option_defaults<S>(), true);
          d["help"] = std::string(f.help);
          d["none"] = std::string(c.none);
          d["low"] = static_cast<double>(c.low);
          d["high"] = static_cast<double>(c.high);
          d["choices"] = c.choices;
          d["non_empty"] = c.non_empty;
          d["internal"] = c.internal;
          out.append(d);
        }
        return out;
      },
      "Every field of the table: name, type (a Python annotation), default, help, none (what "
      "None means, '' if refused), low/high, choices, non_empty, internal.");
}

}  // namespace

void bind_options(nb::module_& m) {
  bind_options<LoaderOptions>(m, "LoaderOptions", "loader",
                              "Options of chute.Loader (sampling, threads, prefetch, ranks).");
  bind_options<WindowOptions>(m, "WindowOptions", "windows",
                              "Options of chute.windows() (variables, steps, normalisation).");
  bind_options<CropOptions>(m, "CropOptions", "crops",
                            "Options of chute.crops() (size, channel axis, transforms).");
  bind_options<CacheOptions>(m, "CacheOptions", "cache",
                             "The node-local cache of chute.open(), packed(), windows(), crops().");
  bind_options<http::HttpOptions>(m, "HttpOptions", "http",
                                  "The HTTP client's settings (chute.set_http_options()).");
  bind_options<StorageOptions>(
      m, "StorageOptions", "storage",
      "Options of the s3:// and gs:// stores (chute.set_storage_options()).");

  m.def(
      "_cache_args",
      [](nb::handle cache, nb::handle cache_size) {
        CacheOptions options;
        if (!cache.is_none())
          set_field("cache", *find_field<CacheOptions>("cache"), options, cache);
        if (!cache_size.is_none()) {
          set_field("cache", *find_field<CacheOptions>("cache_size"), options, cache_size);
          if (cache.is_none()) {
            fail(ErrorCode::kInvalidArgument,
                 "cache: cache_size = {} needs a cache folder (cache=...): without one it does "
                 "nothing",
                 options.max_bytes);
          }
        }
        validate(options);
        return nb::make_tuple(nb::bytes(options.dir.data(), options.dir.size()),
                              cache_size.is_none() ? uint64_t{0} : options.max_bytes);
      },
      nb::arg("cache").none(), nb::arg("cache_size").none(),
      "(folder as bytes, size limit) for the core, from chute.open's cache= and cache_size= "
      "(b\"\" and 0: no cache, the default limit); each is checked, and cache_size needs a cache.");

  m.def("_http_options", [] { return fields_dict(http::options(), false); });
  m.def(
      "_set_http_options",
      [](const nb::kwargs& keywords) {
        http::HttpOptions options = http::options();
        set_keywords("http", options, keywords);
        http::set_options(options);
      },
      "Changes the named settings of the HTTP client (each checked; nothing changes on an "
      "error).");

  m.def(
      "_storage_options",
      [](const std::string& scheme) {
        return fields_dict(StorageOptions::from(object_store_options(scheme)), true);
      },
      nb::arg("scheme"));
  m.def(
      "_set_storage_options",
      [](const std::string& scheme, const nb::kwargs& keywords) {
        if (scheme != "s3" && scheme != "gs") {
          fail(ErrorCode::kInvalidArgument, "storage options are for 's3' or 'gs', not '{}'",
               scheme);
        }
        StorageOptions options;
        set_keywords(scheme + " storage", options, keywords);
        set_object_store_options(scheme, options.settings());
      },
      nb::arg("scheme"), nb::arg("options"),
      "Replaces the options of every `scheme` store opened afterwards.");
}

}  // namespace chute::python
