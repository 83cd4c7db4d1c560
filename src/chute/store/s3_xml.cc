#include "chute/store/s3_xml.h"

#include <expat.h>

#include <charconv>
#include <climits>
#include <functional>
#include <vector>

#include "chute/util/error.h"

namespace chute {
namespace {

constexpr int kMaxDepth = 16;  // ListBucketResult > Contents > Owner > ID is 4 deep
constexpr size_t kMaxText = 64 * 1024;

// Collects the text of elements by their path ("ListBucketResult/Contents/Key"); calls
// `on_end(path, text)` as each element closes.
class XmlWalker {
 public:
  template <typename OnEnd>
  bool run(std::string_view xml, OnEnd&& on_end, std::string* error) {
    if (xml.size() > static_cast<size_t>(INT_MAX)) {
      *error = "document too large";
      return false;
    }
    XML_Parser parser = XML_ParserCreate(nullptr);
    if (parser == nullptr) {
      *error = "out of memory";
      return false;
    }
    State state{
        parser, {}, {},
        {},     {}, [&](const std::string& path, const std::string& text) {
                  on_end(path, text); }};
    XML_SetUserData(parser, &state);
    XML_SetElementHandler(parser, &State::start, &State::end);
    XML_SetCharacterDataHandler(parser, &State::on_text);
    XML_SetStartDoctypeDeclHandler(parser, &State::doctype);
    const XML_Status status = XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE);
    bool ok = status == XML_STATUS_OK && state.failure.empty();
    if (!ok) {
      *error = !state.failure.empty()
                   ? state.failure
                   : fmt::format("{} at line {}", XML_ErrorString(XML_GetErrorCode(parser)),
                                 XML_GetCurrentLineNumber(parser));
    }
    XML_ParserFree(parser);
    return ok;
  }

 private:
  struct State {
    XML_Parser parser;
    std::vector<size_t> path_lengths;
    std::string path;
    std::string text;
    std::string failure;
    std::function<void(const std::string&, const std::string&)> on_end;

    void stop(std::string why) {
      if (failure.empty()) failure = std::move(why);
      XML_StopParser(parser, XML_FALSE);
    }
    static void start(void* data, const XML_Char* name, const XML_Char**) {
      auto& s = *static_cast<State*>(data);
      if (s.path_lengths.size() >= kMaxDepth) return s.stop("elements nested too deep");
      s.path_lengths.push_back(s.path.size());
      if (!s.path.empty()) s.path += '/';
      std::string_view local(name);
      // Without namespace processing a default xmlns leaves names bare; a prefixed name
      // ("s3:Key") keeps its local part.
      if (auto colon = local.rfind(':'); colon != std::string_view::npos) {
        local.remove_prefix(colon + 1);
      }
      s.path += local;
      s.text.clear();
    }
    static void end(void* data, const XML_Char*) {
      auto& s = *static_cast<State*>(data);
      if (s.path_lengths.empty() || !s.failure.empty()) return;
      s.on_end(s.path, s.text);
      s.path.resize(s.path_lengths.back());
      s.path_lengths.pop_back();
      s.text.clear();
    }
    static void on_text(void* data, const XML_Char* chars, int length) {
      auto& s = *static_cast<State*>(data);
      if (s.text.size() + static_cast<size_t>(length) > kMaxText) {
        return s.stop("element text longer than 64 KiB");
      }
      s.text.append(chars, static_cast<size_t>(length));
    }
    static void doctype(void* data, const XML_Char*, const XML_Char*, const XML_Char*, int) {
      static_cast<State*>(data)->stop("a DOCTYPE is not allowed");
    }
  };
};

}  // namespace

S3ListPage parse_list_objects_v2(std::string_view xml, std::string_view where) {
  S3ListPage page;
  bool saw_root = false;
  std::string bad_size;
  S3ListPage::Object current;
  std::string error;
  const bool ok = XmlWalker().run(
      xml,
      [&](const std::string& path, const std::string& text) {
        if (path == "ListBucketResult") {
          saw_root = true;
        } else if (path == "ListBucketResult/Contents/Key") {
          current.key = text;
        } else if (path == "ListBucketResult/Contents/Size") {
          const auto [end, ec] =
              std::from_chars(text.data(), text.data() + text.size(), current.size);
          if (ec != std::errc() || end != text.data() + text.size()) bad_size = text;
        } else if (path == "ListBucketResult/Contents") {
          page.objects.push_back(std::move(current));
          current = {};
        } else if (path == "ListBucketResult/CommonPrefixes/Prefix") {
          page.common_prefixes.push_back(text);
        } else if (path == "ListBucketResult/IsTruncated") {
          page.truncated = text == "true";
        } else if (path == "ListBucketResult/NextContinuationToken") {
          page.next_continuation_token = text;
        }
      },
      &error);
  if (!ok) fail(ErrorCode::kCorruptData, "{}: listing is not well-formed XML: {}", where, error);
  if (!saw_root) fail(ErrorCode::kCorruptData, "{}: listing has no <ListBucketResult>", where);
  if (!bad_size.empty()) {
    fail(ErrorCode::kCorruptData, "{}: listing has an object size '{}' that is not a number", where,
         bad_size.substr(0, 40));
  }
  if (page.truncated && page.next_continuation_token.empty()) {
    fail(ErrorCode::kCorruptData, "{}: listing is truncated but carries no <NextContinuationToken>",
         where);
  }
  return page;
}

std::optional<S3ErrorBody> parse_s3_error(std::string_view xml) {
  S3ErrorBody body;
  bool saw_root = false;
  std::string error;
  const bool ok = XmlWalker().run(
      xml,
      [&](const std::string& path, const std::string& text) {
        if (path == "Error") saw_root = true;
        if (path == "Error/Code") body.code = text;
        if (path == "Error/Message") body.message = text;
      },
      &error);
  if (!ok || !saw_root || body.code.empty()) return std::nullopt;
  return body;
}

}  // namespace chute
