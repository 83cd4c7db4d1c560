// libFuzzer target: arbitrary bytes as an S3 ListObjectsV2 page and as an S3 error body. The
// listing either parses or throws chute::Error; the error parser never throws.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "chute/store/s3_xml.h"
#include "chute/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  try {
    const chute::S3ListPage page = chute::parse_list_objects_v2(xml, "fuzz");
    if (page.truncated && page.next_continuation_token.empty()) __builtin_trap();
  } catch (const chute::Error&) {
  }
  (void)chute::parse_s3_error(xml);
  return 0;
}
