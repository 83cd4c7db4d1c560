#include "chute/store/s3_xml.h"

#include <gtest/gtest.h>

#include "chute/util/error.h"

namespace chute {
namespace {

// Shaped like AWS's ListObjectsV2 response (S3 API reference), with a default namespace.
constexpr std::string_view kPage = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name>
  <Prefix>data.zarr/</Prefix>
  <KeyCount>3</KeyCount>
  <MaxKeys>1000</MaxKeys>
  <Delimiter>/</Delimiter>
  <IsTruncated>true</IsTruncated>
  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents>
    <Key>data.zarr/.zattrs</Key>
    <LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>"fba9dede5f27731c9771645a39863328"</ETag>
    <Size>434234</Size>
    <Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID></Owner>
    <StorageClass>STANDARD</StorageClass>
  </Contents>
  <Contents><Key>data.zarr/a &amp; b</Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>data.zarr/temp/</Prefix></CommonPrefixes>
  <CommonPrefixes><Prefix>data.zarr/wind/</Prefix></CommonPrefixes>
</ListBucketResult>)";

TEST(S3Xml, ParsesAListingPage) {
  const S3ListPage page = parse_list_objects_v2(kPage, "s3://bucket/data.zarr");
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "data.zarr/.zattrs");
  EXPECT_EQ(page.objects[0].size, 434234u);
  EXPECT_EQ(page.objects[1].key, "data.zarr/a & b");
  EXPECT_EQ(page.objects[1].size, 0u);
  EXPECT_EQ(page.common_prefixes, (std::vector<std::string>{"data.zarr/temp/", "data.zarr/wind/"}));
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3Xml, LastPageAndEmptyListing) {
  const S3ListPage page = parse_list_objects_v2(
      "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", "here");
  EXPECT_FALSE(page.truncated);
  EXPECT_TRUE(page.objects.empty());
  EXPECT_TRUE(page.common_prefixes.empty());
}

void expect_corrupt(std::string_view xml, std::string_view needle) {
  try {
    parse_list_objects_v2(xml, "s3://b/p");
    ADD_FAILURE() << "no error for " << xml;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCorruptData);
    EXPECT_NE(std::string(e.what()).find("s3://b/p"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(S3Xml, BadListingsAreCorruptDataNamingWhere) {
  expect_corrupt("<ListBucketResult><Contents>", "not well-formed");
  expect_corrupt("<html><body>proxy error</body></html>", "no <ListBucketResult>");
  expect_corrupt("", "not well-formed");
  expect_corrupt(
      "<ListBucketResult><Contents><Key>k</Key><Size>-3</Size></Contents>"
      "</ListBucketResult>",
      "'-3' that is not a number");
  expect_corrupt("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                 "no <NextContinuationToken>");
  expect_corrupt(R"(<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>
                    <ListBucketResult><Prefix>&lol;</Prefix></ListBucketResult>)",
                 "DOCTYPE");
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  expect_corrupt("<ListBucketResult>" + deep, "nested too deep");
}

TEST(S3Xml, ErrorBodies) {
  const auto error = parse_s3_error(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>
<Key>data.zarr/.zarray</Key><RequestId>4442587FB7D0A2F9</RequestId></Error>)");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "NoSuchKey");
  EXPECT_EQ(error->message, "The specified key does not exist.");
  EXPECT_FALSE(parse_s3_error("").has_value());
  EXPECT_FALSE(parse_s3_error("<html>503 Service Unavailable</html>").has_value());
  EXPECT_FALSE(parse_s3_error("<Error><Message>no code</Message></Error>").has_value());
  EXPECT_FALSE(parse_s3_error("<Error><Code>Slow").has_value());
}

}  // namespace
}  // namespace chute
