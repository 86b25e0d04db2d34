// Compressed infer requests and responses (issue 10): gzip and deflate bodies
// are decompressed with the body limit applied to what they decompress to;
// Accept-Encoding is honoured; other codings are 501.
#include "serve/http/content_encoding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <zlib.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "fakes/fake_model_server.h"
#include "serve/http/http_server.h"
#include "serve/http/test_http_client.h"

namespace ortgpu::serve {
namespace {

using ::testing::HasSubstr;
using serve::testing::TestHttpClient;

const std::string kEchoBody =
    R"({"id":"z","inputs":[{"name":"x","datatype":"FP32","shape":[1,2],"data":[[1.5,2.5]]}]})";

std::string RawDeflate(const std::string& s) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, s.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ContentEncodingTest, RoundTripsAndLimits) {
  const std::string text(10000, 'a');
  for (ContentCoding c : {ContentCoding::kGzip, ContentCoding::kDeflate}) {
    auto packed = Compress(text, c);
    ASSERT_TRUE(packed.ok());
    EXPECT_LT(packed->size(), text.size());
    auto back = Decompress(*packed, c, 1 << 20);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, text);
    auto over = Decompress(*packed, c, 9999);
    EXPECT_EQ(over.status().code(), Code::kResourceExhausted);
    EXPECT_THAT(over.status().message(), HasSubstr("--max-body-bytes"));
  }
  auto raw = Decompress(RawDeflate(text), ContentCoding::kDeflate, 1 << 20);  // raw deflate, as some clients send
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(*raw, text);
  EXPECT_EQ(Decompress("not compressed", ContentCoding::kGzip, 1 << 20).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseContentEncoding("br").status().code(), Code::kUnimplemented);
  EXPECT_EQ(*ParseContentEncoding(" GZIP "), ContentCoding::kGzip);
}

TEST(ContentEncodingTest, AcceptEncodingChoosesGzipThenDeflate) {
  EXPECT_EQ(ChooseResponseCoding("gzip, deflate"), ContentCoding::kGzip);
  EXPECT_EQ(ChooseResponseCoding("deflate;q=0.5, gzip;q=0"), ContentCoding::kDeflate);
  EXPECT_EQ(ChooseResponseCoding("br"), std::nullopt);
  EXPECT_EQ(ChooseResponseCoding(""), std::nullopt);
}

TEST(ContentEncodingTest, CompressedInferOverHttp) {
  FakeModelServer fake;
  HttpOptions o;
  o.port = 0;
  o.threads = 1;
  o.max_body_bytes = 300;
  auto s = HttpServer::Start(fake, o);
  ASSERT_TRUE(s.ok());
  TestHttpClient c((*s)->port());
  auto r = c.Post("/v2/models/echo/infer", *Compress(kEchoBody, ContentCoding::kGzip),
                  {{"Content-Encoding", "gzip"}, {"Accept-Encoding", "gzip"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("Content-Encoding"), "gzip");
  auto plain = Decompress(r.body, ContentCoding::kGzip, 1 << 20);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(nlohmann::json::parse(*plain)["id"], "z");

  // Binary outputs (sections borrowed from the request) are compressed too.
  const std::string json = R"({"inputs":[{"name":"x","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}],)"
                           R"("outputs":[{"name":"x","parameters":{"binary_data":true}}]})";
  const int32_t v[2] = {7, -9};
  r = c.Post("/v2/models/echo/infer", json + std::string(reinterpret_cast<const char*>(v), 8),
             {{"Inference-Header-Content-Length", std::to_string(json.size())}, {"Accept-Encoding", "deflate"}});
  ASSERT_EQ(r.status, 200u) << r.body;
  EXPECT_EQ(r.header("Content-Encoding"), "deflate");
  auto body = Decompress(r.body, ContentCoding::kDeflate, 1 << 20);
  ASSERT_TRUE(body.ok());
  const size_t jl = std::stoul(r.header("Inference-Header-Content-Length"));
  ASSERT_EQ(body->size(), jl + 8);
  int32_t back[2];
  std::memcpy(back, body->data() + jl, 8);
  EXPECT_EQ(back[1], -9);

  // Fewer than 300 bytes on the wire, more once decompressed: 413.
  const std::string big = R"({"id":")" + std::string(600, 'q') + R"(","inputs":[]})";
  auto packed = Compress(big, ContentCoding::kDeflate);
  ASSERT_LT(packed->size(), 300u);
  r = c.Post("/v2/models/echo/infer", *packed, {{"Content-Encoding", "deflate"}});
  EXPECT_EQ(r.status, 413u);
  (*s)->Stop();
}

}  // namespace
}  // namespace ortgpu::serve
