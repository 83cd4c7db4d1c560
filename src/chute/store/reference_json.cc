// kerchunk's JSON reference documents (version 0 and 1) parsed into references. The version 1
// templates are rendered by a small evaluator of what kerchunk writes into them: names (of
// templates and generator dimensions), integers, + - * / // % and brackets; not full Jinja.

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>
#include <variant>

#include "chute/store/reference_store.h"
#include "chute/util/error.h"
#include "chute/util/interrupt.h"
#include "chute/util/json_limits.h"

namespace chute {

using nlohmann::json;

namespace {

// Larger than the metadata limit: a reference set lists every chunk of an archive.
constexpr size_t kMaxReferenceBytes = size_t{4} << 30;
// Documents from this size on (about half a second of parsing) are parsed interruptibly.
constexpr size_t kInterruptibleParseBytes = size_t{16} << 20;

using Value = std::variant<int64_t, std::string>;
using Variables = std::map<std::string, Value, std::less<>>;

class Expression {
 public:
  Expression(std::string_view text, const Variables& vars, const std::string& context)
      : text_(text), vars_(vars), context_(context) {}

  Value evaluate() {
    Value v = sum();
    skip_space();
    if (pos_ != text_.size()) bad("unexpected '" + std::string(text_.substr(pos_)) + "'");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(ErrorCode::kInvalidMetadata, "{}: template '{{{{{}}}}}': {}", context_, text_, what);
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(std::string_view op) {
    skip_space();
    if (text_.substr(pos_, op.size()) != op) return false;
    pos_ += op.size();
    return true;
  }
  int64_t integer(const Value& v) const {
    if (const auto* i = std::get_if<int64_t>(&v)) return *i;
    bad("arithmetic on text '" + std::get<std::string>(v) + "'");
  }
  Value sum() {
    Value left = product();
    for (;;) {
      if (take("+")) {
        Value right = product();
        if (std::holds_alternative<std::string>(left) &&
            std::holds_alternative<std::string>(right)) {
          left = std::get<std::string>(left) + std::get<std::string>(right);
        } else {
          left = integer(left) + integer(right);
        }
      } else if (take("-")) {
        left = integer(left) - integer(product());
      } else {
        return left;
      }
    }
  }
  Value product() {
    Value left = unary();
    for (;;) {
      if (take("*")) {
        left = integer(left) * integer(unary());
      } else if (take("//") || take("/")) {
        const int64_t d = integer(unary());
        if (d == 0) bad("division by zero");
        const int64_t n = integer(left);
        int64_t q = n / d;
        if ((n % d != 0) && ((n < 0) != (d < 0))) --q;  // Python's floor division
        left = q;
      } else if (take("%")) {
        const int64_t d = integer(unary());
        if (d == 0) bad("division by zero");
        const int64_t r = integer(left) % d;
        left = (r != 0 && ((r < 0) != (d < 0))) ? r + d : r;
      } else {
        return left;
      }
    }
  }
  Value unary() {
    if (take("-")) return -integer(unary());
    if (take("(")) {
      Value v = sum();
      if (!take(")")) bad("missing ')'");
      return v;
    }
    skip_space();
    const size_t begin = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int64_t n = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (n > (INT64_MAX - 9) / 10) bad("integer too large");
        n = n * 10 + (text_[pos_++] - '0');
      }
      return n;
    }
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (pos_ == begin) bad("expected a name, a number or '('");
    const std::string_view name = text_.substr(begin, pos_ - begin);
    auto it = vars_.find(name);
    if (it == vars_.end()) bad("unknown name '" + std::string(name) + "'");
    return it->second;
  }

  std::string_view text_;
  const Variables& vars_;
  const std::string& context_;
  size_t pos_ = 0;
};

std::string render(const std::string& text, const Variables& vars, const std::string& context) {
  if (text.find("{{") == std::string::npos) return text;
  std::string out;
  size_t pos = 0;
  for (;;) {
    const size_t open = text.find("{{", pos);
    if (open == std::string::npos) break;
    const size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) {
      fail(ErrorCode::kInvalidMetadata, "{}: '{}' has '{{{{' without '}}}}'", context, text);
    }
    out += text.substr(pos, open - pos);
    const Value v =
        Expression(std::string_view(text).substr(open + 2, close - open - 2), vars, context)
            .evaluate();
    out += std::holds_alternative<int64_t>(v) ? std::to_string(std::get<int64_t>(v))
                                              : std::get<std::string>(v);
    pos = close + 2;
  }
  return out + text.substr(pos);
}

std::vector<std::byte> decode_base64(std::string_view text, const std::string& context) {
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::vector<std::byte> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') break;
    if (c == '\n' || c == '\r') continue;
    const int v = sextet(c);
    if (v < 0) fail(ErrorCode::kInvalidMetadata, "{}: invalid base64 character '{}'", context, c);
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if ((count += 6) >= 8) {
      count -= 8;
      out.push_back(static_cast<std::byte>((bits >> count) & 0xffu));
    }
  }
  return out;
}

std::vector<std::byte> text_bytes(std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return {p, p + text.size()};
}

uint64_t non_negative(const json& v, const std::string& context, const char* what,
                      const Variables& vars) {
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<uint64_t>();
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_string()) {
    const std::string text = render(v.get<std::string>(), vars, context);
    try {
      size_t used = 0;
      const long long n = std::stoll(text, &used);
      if (used == text.size() && n >= 0) return static_cast<uint64_t>(n);
    } catch (const std::exception&) {
    }
  }
  fail(ErrorCode::kInvalidMetadata, "{}: {} is {}, expected an integer >= 0", context, what,
       v.dump());
}

Reference parse_value(const std::string& key, const json& value, const Variables& templates,
                      const std::string& name) {
  const std::string context = fmt::format("reference file '{}': key '{}'", name, key);
  Reference ref;
  ref.key = key;
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    ref.data = text.starts_with("base64:")
                   ? decode_base64(std::string_view(text).substr(7), context)
                   : text_bytes(text);
    return ref;
  }
  if (value.is_object()) {
    ref.data = text_bytes(value.dump());
    return ref;
  }
  if (!value.is_array() || (value.size() != 1 && value.size() != 3) || !value[0].is_string()) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: expected a string, [url] or [url, offset, length], got {}", context,
         value.dump().substr(0, 200));
  }
  ref.url = render(value[0].get<std::string>(), templates, context);
  if (ref.url.empty()) fail(ErrorCode::kInvalidMetadata, "{}: empty target url", context);
  if (value.size() == 3) {
    ref.offset = non_negative(value[1], context, "offset", templates);
    ref.length = non_negative(value[2], context, "length", templates);
  }
  return ref;
}

// Expands one "gen" entry over the product of its dimensions.
void expand_generator(const json& gen, const Variables& templates, const std::string& name,
                      std::vector<Reference>& out) {
  const std::string context = fmt::format("reference file '{}': gen entry", name);
  if (!gen.is_object() || !gen.contains("key") || !gen.contains("url") || !gen["key"].is_string() ||
      !gen["url"].is_string()) {
    fail(ErrorCode::kInvalidMetadata, "{} {} needs string 'key' and 'url'", context,
         gen.dump().substr(0, 200));
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
  if (auto it = gen.find("dimensions"); it != gen.end()) {
    if (!it->is_object())
      fail(ErrorCode::kInvalidMetadata, "{}: 'dimensions' is not an object", context);
    for (const auto& [dim, spec] : it->items()) {
      std::vector<int64_t> values;
      if (spec.is_array()) {
        for (const auto& v : spec) {
          if (!v.is_number_integer()) {
            fail(ErrorCode::kInvalidMetadata, "{}: dimension '{}' holds {}, expected integers",
                 context, dim, v.dump());
          }
          values.push_back(v.get<int64_t>());
        }
      } else if (spec.is_object()) {
        const int64_t start = spec.value("start", int64_t{0});
        const int64_t stop = spec.value("stop", int64_t{0});
        const int64_t step = spec.value("step", int64_t{1});
        if (step <= 0 || stop - start > (int64_t{1} << 32)) {
          fail(ErrorCode::kInvalidMetadata, "{}: dimension '{}' is {}", context, dim, spec.dump());
        }
        for (int64_t v = start; v < stop; v += step) values.push_back(v);
      } else {
        fail(ErrorCode::kInvalidMetadata, "{}: dimension '{}' is {}", context, dim, spec.dump());
      }
      dims.emplace_back(dim, std::move(values));
    }
  }
  for (const auto& d : dims) {
    if (d.second.empty()) return;
  }
  Variables vars = templates;
  std::vector<size_t> index(dims.size(), 0);
  const std::string key = gen["key"].get<std::string>();
  const std::string url = gen["url"].get<std::string>();
  InterruptPoll poll;
  for (;;) {
    poll();
    for (size_t d = 0; d < dims.size(); ++d) vars[dims[d].first] = dims[d].second[index[d]];
    Reference ref;
    ref.key = render(key, vars, context);
    ref.url = render(url, vars, context);
    if (gen.contains("offset") || gen.contains("length")) {
      ref.offset = non_negative(gen.value("offset", json(0)), context, "offset", vars);
      ref.length = non_negative(gen.value("length", json(0)), context, "length", vars);
    }
    out.push_back(std::move(ref));
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++index[d] < dims[d].second.size()) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (dims.empty()) return;
  }
}

bool is_metadata_key(std::string_view key) {
  for (std::string_view leaf : {".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json"}) {
    if (key == leaf) return true;
    if (key.size() > leaf.size() && key.ends_with(leaf) && key[key.size() - leaf.size() - 1] == '/')
      return true;
  }
  return false;
}

}  // namespace

std::vector<Reference> parse_json_references(std::string_view text, const std::string& name) {
  const std::string context = fmt::format("reference file '{}'", name);
  check_json_limits(text, context, kMaxJsonDepth, kMaxReferenceBytes);
  // A parse with a callback (to poll for an interruption) takes about a quarter longer: only
  // for documents whose parse takes long enough to want interrupting.
  InterruptPoll poll;
  json doc = text.size() < kInterruptibleParseBytes
                 ? json::parse(text, nullptr, /*allow_exceptions=*/false)
                 : json::parse(
                       text,
                       [&poll](int, json::parse_event_t, json&) {
                         poll();
                         return true;
                       },
                       /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    fail(ErrorCode::kInvalidMetadata, "{}: not a JSON object of references", context);
  }
  std::vector<Reference> out;
  Variables templates;
  const json* refs = &doc;
  if (auto version = doc.find("version"); version != doc.end()) {
    if (*version != 1) {
      fail(ErrorCode::kUnsupported,
           "{}: reference format version {} (chute reads kerchunk versions 0 and 1)", context,
           version->dump());
    }
    auto r = doc.find("refs");
    if (r == doc.end() || !r->is_object()) {
      fail(ErrorCode::kInvalidMetadata, "{}: version 1 without a 'refs' object", context);
    }
    refs = &*r;
    if (auto t = doc.find("templates"); t != doc.end() && t->is_object()) {
      for (const auto& [k, v] : t->items()) {
        if (!v.is_string()) {
          fail(ErrorCode::kInvalidMetadata, "{}: template '{}' is {}, expected text", context, k,
               v.dump());
        }
        templates[k] = v.get<std::string>();
      }
    }
    if (auto g = doc.find("gen"); g != doc.end()) {
      if (!g->is_array()) fail(ErrorCode::kInvalidMetadata, "{}: 'gen' is not a list", context);
      for (const auto& gen : *g) expand_generator(gen, templates, name, out);
    }
  }
  bool zarr = false;
  for (const auto& [key, value] : refs->items()) zarr = zarr || is_metadata_key(key);
  if (!zarr) {
    fail(ErrorCode::kInvalidMetadata,
         "{}: JSON, but not a Zarr reference set (no .zgroup, .zarray or zarr.json key among {} "
         "keys)",
         context, refs->size());
  }
  out.reserve(out.size() + refs->size());
  for (const auto& [key, value] : refs->items()) {
    poll();
    out.push_back(parse_value(key, value, templates, name));
  }
  return out;
}

}  // namespace chute
