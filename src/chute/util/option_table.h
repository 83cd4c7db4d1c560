#pragma once
// One declaration per option. Each option struct (LoaderOptions, CropOptions, WindowOptions,
// CacheOptions, http::HttpOptions, StorageOptions) lists its fields once in a table: the name users
// type (Python keyword, CLI flag with '-' for '_'), the member, one line of help, and the check (a
// range, a choice, non-empty). The default is the struct's member initialiser. Everything else is
// derived from the table: the checks in validate(), the Python classes and keyword signatures
// (python/src/options.cc, scripts/gen_options.py), the CLI flags (tools/chute/cli/) and
// docs/reference/options.md.
//
//   const std::vector<OptionField<LoaderOptions>>& LoaderOptions::fields() {
//     static const std::vector<OptionField<LoaderOptions>> table = {
//         {"prefetch", &LoaderOptions::prefetch, "batches queued ahead of the consumer",
//          {.low = 1, .high = 4096}},
//     };
//     return table;
//   }
//
// The structs with a table: LoaderOptions, CropOptions, WindowOptions, CacheOptions,
// http::HttpOptions (the HTTP client) and StorageOptions (the s3:// and gs:// stores).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "chute/util/error.h"

namespace chute {

static_assert(std::is_same_v<size_t, uint64_t>, "size_t fields are stored as uint64_t");

/// How one option is checked and what Python's None means for it.
struct OptionCheck {
  /// Numbers (and each element of a list of numbers) must lie in [low, high].
  long double low = -std::numeric_limits<long double>::infinity();
  long double high = std::numeric_limits<long double>::infinity();
  /// Strings: the values allowed (empty: any).
  std::vector<std::string> choices = {};
  /// Lists: at least one element.
  bool non_empty = false;
  /// Non-empty: Python's None is accepted and means this ("one per CPU"); it leaves the
  /// member's default, which is then outside [low, high] on purpose (0: automatic).
  std::string_view none = {};
  /// Python's default is None (with `none` set): the member's default means "automatic".
  bool default_none = false;
  /// Set by the Python layer from other arguments (not a keyword of its own, not documented).
  bool internal = false;
  /// A path: Python also accepts os.PathLike (and bytes, the file system's encoding).
  bool path = false;
  /// Numbers: NaN and infinities pass this table's check (validate() decides, e.g. only when the
  /// value is used).
  bool non_finite = false;
  /// The Python annotation when the Python layer accepts more than the member holds.
  std::string_view python_type = {};
};

/// A field whose stored form is not one of the plain types (an enum, a DataType): it is read and
/// written as a string, one of `check.choices`.
template <typename S>
struct OptionText {
  std::string (*get)(const S&);
  void (*set)(S&, const std::string&);
};

template <typename S>
struct OptionField {
  using Member =
      std::variant<bool S::*, int S::*, int64_t S::*, uint64_t S::*, float S::*, double S::*,
                   std::string S::*, std::optional<int64_t> S::*, std::optional<bool> S::*,
                   std::vector<int64_t> S::*, std::vector<double> S::*, std::vector<float> S::*,
                   std::vector<std::string> S::*, OptionText<S>>;
  template <typename M>
  OptionField(std::string_view name, M member, std::string_view help, OptionCheck check = {})
      : name(name), member(member), help(help), check(std::move(check)) {}

  std::string_view name;  // Python keyword; the CLI flag is --name with '-' for '_'
  Member member;
  std::string_view help;  // one line, for docstrings, --help and the reference
  OptionCheck check;
};

namespace detail {

inline std::string limit_text(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == std::floor(v) && std::fabs(v) < 1.9e19L) {
    return v < 0 ? fmt::format("-{}", static_cast<uint64_t>(-v))
                 : fmt::format("{}", static_cast<uint64_t>(v));
  }
  return fmt::format("{}", static_cast<double>(v));
}

template <typename T>
void check_number(std::string_view owner, std::string_view name, T value, const OptionCheck& c) {
  const auto v = static_cast<long double>(value);
  if constexpr (std::is_floating_point_v<T>) {
    if (c.non_finite && !std::isfinite(v)) return;
    if (!std::isfinite(v)) {
      fail(ErrorCode::kInvalidArgument, "{}: {} = {} is not a finite number", owner, name, value);
    }
  }
  if (v >= c.low && v <= c.high) return;
  fail(ErrorCode::kInvalidArgument, "{}: {} = {} is outside [{}, {}]{}", owner, name, value,
       limit_text(c.low), limit_text(c.high),
       c.none.empty() ? std::string() : fmt::format(" (None: {})", c.none));
}

inline void check_choice(std::string_view owner, std::string_view name, const std::string& value,
                         const OptionCheck& c) {
  if (c.choices.empty()) return;
  for (const std::string& allowed : c.choices) {
    if (value == allowed) return;
  }
  fail(ErrorCode::kInvalidArgument, "{}: {} = '{}' is not one of '{}'", owner, name, value,
       fmt::join(c.choices, "', '"));
}

template <typename T>
void check_list(std::string_view owner, std::string_view name, const std::vector<T>& values,
                const OptionCheck& c) {
  if (c.non_empty && values.empty()) {
    fail(ErrorCode::kInvalidArgument, "{}: {} must not be empty", owner, name);
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string item = fmt::format("{}[{}]", name, i);
    if constexpr (std::is_same_v<T, std::string>) {
      check_choice(owner, item, values[i], c);
    } else {
      check_number(owner, item, values[i], c);
    }
  }
}

}  // namespace detail

/// Checks one field of `options` against its table entry; throws kInvalidArgument naming
/// `owner`, the option (as Python spells it), the value and what is allowed. A field left at a
/// default that `check.none` describes (0: automatic) is accepted.
/// A default-constructed S, made once.
template <typename S>
const S& option_defaults() {
  static const S defaults{};
  return defaults;
}

template <typename S>
void check_field(std::string_view owner, const OptionField<S>& field, const S& options) {
  const OptionCheck& c = field.check;
  std::visit(
      [&](const auto& member) {
        using M = std::decay_t<decltype(member)>;
        if constexpr (std::is_same_v<M, OptionText<S>>) {
          detail::check_choice(owner, field.name, member.get(options), c);
        } else {
          const auto& value = options.*member;
          using T = std::decay_t<decltype(value)>;
          // A default that None stands for (0: automatic, empty: not given) is accepted.
          if (!c.none.empty() && value == option_defaults<S>().*member) return;
          if constexpr (std::is_same_v<T, bool>) {
          } else if constexpr (std::is_arithmetic_v<T>) {
            detail::check_number(owner, field.name, value, c);
          } else if constexpr (std::is_same_v<T, std::string>) {
            detail::check_choice(owner, field.name, value, c);
          } else if constexpr (std::is_same_v<T, std::optional<int64_t>>) {
            if (value) detail::check_number(owner, field.name, *value, c);
          } else if constexpr (std::is_same_v<T, std::optional<bool>>) {
          } else {
            detail::check_list(owner, field.name, value, c);
          }
        }
      },
      field.member);
}

/// Checks every field of `options` (what validate() does before the checks across fields).
template <typename S>
void check_fields(std::string_view owner, const S& options) {
  for (const OptionField<S>& field : S::fields()) check_field(owner, field, options);
}

/// The field named `name` (its Python keyword), or nullptr.
template <typename S>
const OptionField<S>* find_field(std::string_view name) {
  for (const OptionField<S>& field : S::fields()) {
    if (field.name == name) return &field;
  }
  return nullptr;
}

}  // namespace chute
