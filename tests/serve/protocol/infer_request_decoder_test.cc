#include "serve/protocol/infer_request_decoder.h"

#include <cmath>
#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::serve::protocol {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Expected<InferRequest> Decode(const std::string& json) { return DecodeInferRequest(json, std::nullopt, "m", ""); }

std::string OneInput(const std::string& datatype, const std::string& shape, const std::string& data) {
  return R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":)" + shape + R"(,"data":)" + data +
         "}]}";
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

void ExpectInvalid(const Expected<InferRequest>& r, const std::string& substring) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr(substring));
}

TEST(DecodeInferRequestTest, ReadsIdParametersAndModelFromUrl) {
  auto r = DecodeInferRequest(
      R"({"id":"req-7","parameters":{"priority":2,"binary_data_output":true},"inputs":[]})", std::nullopt, "resnet",
      "3");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->model_name, "resnet");
  EXPECT_EQ(r->model_version, "3");
  EXPECT_EQ(r->id, "req-7");
  EXPECT_TRUE(r->binary_data_output);
  EXPECT_EQ(r->parameters.at("priority"), "2");
}

TEST(DecodeInferRequestTest, EveryNumericDatatypeFromJson) {
  auto check = [](const std::string& dt, const std::string& data, DataType want) {
    auto r = Decode(OneInput(dt, "[3]", data));
    ASSERT_TRUE(r.ok()) << dt << ": " << r.status().ToString();
    EXPECT_EQ(r->inputs[0].dtype, want);
    EXPECT_EQ(r->inputs[0].data.size(), 3 * ElementSize(want)) << dt;
  };
  check("UINT8", "[0,1,255]", DataType::kUint8);
  check("UINT16", "[0,1,65535]", DataType::kUint16);
  check("UINT32", "[0,1,4294967295]", DataType::kUint32);
  check("UINT64", "[0,1,18446744073709551615]", DataType::kUint64);
  check("INT8", "[-128,0,127]", DataType::kInt8);
  check("INT16", "[-32768,0,32767]", DataType::kInt16);
  check("INT32", "[-2147483648,0,2147483647]", DataType::kInt32);
  check("INT64", "[-9223372036854775808,0,9223372036854775807]", DataType::kInt64);
  check("FP16", "[0.5,-2,65504]", DataType::kFloat16);
  check("BF16", "[0.5,-2,1e38]", DataType::kBfloat16);
  check("FP32", "[0.5,-2,3.25]", DataType::kFloat);
  check("FP64", "[0.5,-2,1e300]", DataType::kDouble);
  check("BOOL", "[true,false,true]", DataType::kBool);
}

TEST(DecodeInferRequestTest, ValuesAreConvertedExactly) {
  auto r = Decode(OneInput("INT64", "[2]", "[-9223372036854775808,42]"));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Values<int64_t>(r->inputs[0]), ElementsAre(INT64_MIN, 42));
  r = Decode(OneInput("UINT64", "[1]", "[18446744073709551615]"));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Values<uint64_t>(r->inputs[0]), ElementsAre(UINT64_MAX));
  r = Decode(OneInput("FP16", "[2]", "[1.5,-0.25]"));
  ASSERT_TRUE(r.ok());
  auto h = Values<uint16_t>(r->inputs[0]);
  EXPECT_EQ(HalfToFloat(h[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(h[1]), -0.25f);
  r = Decode(OneInput("BF16", "[1]", "[3]"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Bfloat16ToFloat(Values<uint16_t>(r->inputs[0])[0]), 3.0f);
  r = Decode(OneInput("BOOL", "[2]", "[true,false]"));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->inputs[0].data, ElementsAre(1, 0));
}

TEST(DecodeInferRequestTest, NestedDataIsFlattenedRowMajor) {
  auto r = Decode(OneInput("INT32", "[2,3]", "[[1,2,3],[4,5,6]]"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(Values<int32_t>(r->inputs[0]), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(r->inputs[0].shape, ElementsAre(2, 3));
}

TEST(DecodeInferRequestTest, BytesFromJsonStrings) {
  auto r = Decode(OneInput("BYTES", "[2]", R"(["hello","w\u00f6rld"])"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].dtype, DataType::kString);
  EXPECT_THAT(r->inputs[0].strings, ElementsAre("hello", "w\xc3\xb6rld"));
}

TEST(DecodeInferRequestTest, NonFiniteFloatsAsStrings) {
  auto r = Decode(OneInput("FP32", "[3]", R"(["NaN","Infinity","-Infinity"])"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto v = Values<float>(r->inputs[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], INFINITY);
  EXPECT_EQ(v[2], -INFINITY);
}

TEST(DecodeInferRequestTest, BareNanTokenIsMalformedJsonWithPosition) {
  ExpectInvalid(Decode(OneInput("FP32", "[1]", "[NaN]")), "not valid JSON (at byte");
}

TEST(DecodeInferRequestTest, MalformedJsonNamesThePosition) {
  auto r = Decode(R"({"inputs":[{"name":"x",}]})");
  ExpectInvalid(r, "at byte 24");
  ExpectInvalid(Decode(""), "not valid JSON");
  ExpectInvalid(Decode("[1,2]"), "must be a JSON object");
}

TEST(DecodeInferRequestTest, IntegerOverflowIsAnError) {
  ExpectInvalid(Decode(OneInput("UINT8", "[1]", "[300]")), "300, out of range for UINT8 [0, 255]");
  ExpectInvalid(Decode(OneInput("UINT8", "[1]", "[-1]")), "out of range for UINT8");
  ExpectInvalid(Decode(OneInput("INT8", "[1]", "[128]")), "out of range for INT8 [-128, 127]");
  ExpectInvalid(Decode(OneInput("INT32", "[1]", "[2147483648]")), "out of range for INT32");
  ExpectInvalid(Decode(OneInput("INT64", "[1]", "[9223372036854775808]")), "out of range for INT64");
  ExpectInvalid(Decode(OneInput("UINT32", "[1]", "[1.5]")), "needs an integer");
}

TEST(DecodeInferRequestTest, FloatOverflowIsAnError) {
  ExpectInvalid(Decode(OneInput("FP16", "[1]", "[70000]")), "too large for FP16");
  ExpectInvalid(Decode(OneInput("FP32", "[1]", "[1e39]")), "too large for FP32");
  ExpectInvalid(Decode(OneInput("BF16", "[1]", "[1e39]")), "too large for BF16");
}

TEST(DecodeInferRequestTest, WrongElementTypes) {
  ExpectInvalid(Decode(OneInput("BOOL", "[1]", "[1]")), "needs true or false");
  ExpectInvalid(Decode(OneInput("FP32", "[1]", R"(["1.0"])")), "element 0 is a string");
  ExpectInvalid(Decode(OneInput("BYTES", "[1]", "[1]")), "needs a string");
  ExpectInvalid(Decode(OneInput("INT32", "[1]", "[null]")), "element 0 is null");
  ExpectInvalid(Decode(OneInput("INT32", "[1]", R"({"a":1})")), "'data' must be an array");
}

TEST(DecodeInferRequestTest, ShapeAndElementCountMustAgree) {
  ExpectInvalid(Decode(OneInput("FP32", "[2,2]", "[1,2,3]")), "'data' has 3 elements but shape [2x2] needs 4");
  ExpectInvalid(Decode(OneInput("FP32", "[2]", "[1,2,3]")), "more than the 2 elements");
  ExpectInvalid(Decode(OneInput("FP32", "[-1,2]", "[1,2]")), "negative dimension -1");
  ExpectInvalid(Decode(OneInput("FP32", "[1.5]", "[1]")), "shape entries must be integers");
  ExpectInvalid(Decode(OneInput("FP32", "[4294967296,4294967296,4294967296]", "[1]")), "too many elements");
}

TEST(DecodeInferRequestTest, ZeroElementTensorIsAccepted) {
  auto r = Decode(OneInput("FP32", "[0,3]", "[]"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->inputs[0].data.size(), 0u);
}

TEST(DecodeInferRequestTest, StructuralErrors) {
  ExpectInvalid(Decode(OneInput("FP33", "[1]", "[1]")), "unknown datatype 'FP33'");
  ExpectInvalid(Decode(R"({})"), "needs 'inputs'");
  ExpectInvalid(Decode(R"({"inputs":[{"datatype":"FP32","shape":[1],"data":[1]}]})"), "needs a string 'name'");
  ExpectInvalid(Decode(R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})"), "needs a string 'datatype'");
  ExpectInvalid(Decode(R"({"inputs":[{"name":"x","datatype":"FP32","data":[1]}]})"), "needs 'shape'");
  ExpectInvalid(Decode(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1]}]})"), "has no 'data'");
  ExpectInvalid(Decode(R"({"id":5,"inputs":[]})"), "'id' must be a string");
  ExpectInvalid(Decode(R"({"parameters":[],"inputs":[]})"), "'parameters' must be an object");
  ExpectInvalid(Decode(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]},)"
                       R"({"name":"x","datatype":"FP32","shape":[1],"data":[1]}]})"),
                "appears twice");
}

TEST(DecodeInferRequestTest, RequestedOutputs) {
  auto r = Decode(R"({"inputs":[],"outputs":[{"name":"a","parameters":{"binary_data":true}},{"name":"b"}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[0].name, "a");
  EXPECT_TRUE(r->outputs[0].binary_data);
  EXPECT_FALSE(r->outputs[1].binary_data);
  ExpectInvalid(Decode(R"({"inputs":[],"outputs":[{"name":"a"},{"name":"a"}]})"), "requested twice");
  ExpectInvalid(Decode(R"({"inputs":[],"outputs":[{"name":"a","parameters":{"binary_data":1}}]})"),
                "must be true or false");
}

TEST(DecodeInferRequestTest, ClassificationIsKeptForTheFrontEnd) {
  auto r = Decode(R"({"inputs":[],"outputs":[{"name":"a","parameters":{"classification":3}}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outputs[0].parameters.at("classification"), "3");
}

TEST(DecodeInferRequestTest, SharedMemoryInputsAreLeftToTheFrontEnd) {
  auto r = Decode(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2],)"
                  R"("parameters":{"shared_memory_region":"r","shared_memory_byte_size":8}}],)"
                  R"("outputs":[{"name":"y","parameters":{"shared_memory_region":"r","shared_memory_byte_size":8}}]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->inputs.size(), 1u);
  EXPECT_TRUE(r->inputs[0].data.empty());
  EXPECT_EQ(r->shared_memory_inputs.at("x").at("shared_memory_region"), "\"r\"");
  EXPECT_EQ(r->outputs[0].parameters.at("shared_memory_byte_size"), "8");
  r = Decode(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],)"
             R"("parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("also sends data"));
}

// --- binary tensor extension ---

std::string BinaryBody(const std::string& json, const std::string& binary, size_t* json_len) {
  *json_len = json.size();
  return json + binary;
}

std::string Le32(uint32_t n) {
  return std::string{static_cast<char>(n & 0xff), static_cast<char>(n >> 8 & 0xff), static_cast<char>(n >> 16 & 0xff),
                     static_cast<char>(n >> 24 & 0xff)};
}

TEST(DecodeInferRequestTest, BinaryInputsTakeConsecutiveBytes) {
  float f[2] = {1.5f, -2.0f};
  int64_t i[1] = {7};
  std::string bin(reinterpret_cast<char*>(f), 8);
  bin.append(reinterpret_cast<char*>(i), 8);
  size_t jl = 0;
  std::string body = BinaryBody(
      R"({"inputs":[{"name":"a","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}},)"
      R"({"name":"b","datatype":"INT64","shape":[1],"parameters":{"binary_data_size":8}}]})",
      bin, &jl);
  auto r = DecodeInferRequest(body, jl, "m", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(Values<float>(r->inputs[0]), ElementsAre(1.5f, -2.0f));
  EXPECT_THAT(Values<int64_t>(r->inputs[1]), ElementsAre(7));
}

TEST(DecodeInferRequestTest, BinaryMixedWithJsonInputs) {
  size_t jl = 0;
  std::string body = BinaryBody(
      R"({"inputs":[{"name":"a","datatype":"UINT8","shape":[2],"data":[1,2]},)"
      R"({"name":"b","datatype":"UINT8","shape":[3],"parameters":{"binary_data_size":3}}]})",
      "\x07\x08\x09", &jl);
  auto r = DecodeInferRequest(body, jl, "m", "");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->inputs[1].data, ElementsAre(7, 8, 9));
}

// Issue 8: with the body's owner, binary tensors are views of the body
// (no copy), and they keep the body alive after the caller lets it go.
TEST(DecodeInferRequestTest, BinaryTensorsBorrowTheBodyTheyArrivedIn) {
  size_t jl = 0;
  auto body = std::make_shared<const std::string>(BinaryBody(
      R"({"inputs":[{"name":"b","datatype":"UINT8","shape":[3],"parameters":{"binary_data_size":3}}]})",
      "\x07\x08\x09", &jl));
  auto r = DecodeInferRequest(*body, jl, "m", "", body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Tensor& b = r->inputs[0];
  EXPECT_TRUE(b.data.borrowed());
  EXPECT_EQ(b.data.data(), reinterpret_cast<const uint8_t*>(body->data()) + jl);
  std::weak_ptr<const std::string> weak = body;
  body.reset();
  EXPECT_FALSE(weak.expired());  // the tensor holds it
  EXPECT_THAT(b.data, ElementsAre(7, 8, 9));
  r->inputs.clear();
  EXPECT_TRUE(weak.expired());
}

// A request whose one BYTES input "s" of `count` elements is `bin` in the
// binary extension.
Expected<InferRequest> DecodeBinaryBytes(const std::string& bin, int count) {
  size_t jl = 0;
  std::string body = BinaryBody(R"({"inputs":[{"name":"s","datatype":"BYTES","shape":[)" + std::to_string(count) +
                                    R"(],"parameters":{"binary_data_size":)" + std::to_string(bin.size()) + "}}]}",
                                bin, &jl);
  return DecodeInferRequest(body, jl, "m", "");
}

TEST(DecodeInferRequestTest, BinaryBytesAreLengthPrefixed) {
  auto r = DecodeBinaryBytes(Le32(3) + "abc" + Le32(0) + Le32(2) + std::string("\0\xff", 2), 3);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(r->inputs[0].strings, ElementsAre("abc", "", std::string("\0\xff", 2)));
}

// Issue 25: a BYTES element is bytes; "he\0llo" keeps all six, from a JSON
// escape and from the binary extension alike.
TEST(DecodeInferRequestTest, Issue25BytesKeepNulBytes) {
  auto json = Decode(OneInput("BYTES", "[3]", R"(["he\u0000llo","\u0000","\u00ff\u001f"])"));
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_THAT(json->inputs[0].strings,
              ElementsAre(std::string("he\0llo", 6), std::string(1, '\0'), "\xc3\xbf\x1f"));
  auto binary = DecodeBinaryBytes(Le32(6) + std::string("he\0llo", 6) + Le32(1) + std::string(1, '\0'), 2);
  ASSERT_TRUE(binary.ok()) << binary.status().ToString();
  EXPECT_THAT(binary->inputs[0].strings, ElementsAre(std::string("he\0llo", 6), std::string(1, '\0')));
  // JSON is UTF-8 text: other bytes are refused, naming the way to send them.
  ExpectInvalid(Decode(OneInput("BYTES", "[1]", "[\"\xff\"]")), "binary_data_size");
}

TEST(DecodeInferRequestTest, BinaryBytesErrors) {
  auto decode = [](const std::string& bin, int count, size_t size) {
    std::string json = R"({"inputs":[{"name":"s","datatype":"BYTES","shape":[)" + std::to_string(count) +
                       R"(],"parameters":{"binary_data_size":)" + std::to_string(size) + "}}]}";
    return DecodeInferRequest(json + bin, json.size(), "m", "");
  };
  ExpectInvalid(decode(Le32(3) + "ab", 1, 6), "claims 3 bytes but only 2 remain");
  ExpectInvalid(decode(Le32(1) + "a" + "zz", 1, 7), "BYTES elements use 5 bytes");
  ExpectInvalid(decode(Le32(1) + "a", 2, 5), "ends inside the length prefix of element 1");
}

TEST(DecodeInferRequestTest, BinarySizesMustAddUp) {
  std::string json = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":8}}]})";
  // Too few bytes in the body.
  ExpectInvalid(DecodeInferRequest(json + std::string(4, '\0'), json.size(), "m", ""),
                "binary_data_size is 8 but only 4 bytes");
  // Too many bytes in the body.
  ExpectInvalid(DecodeInferRequest(json + std::string(12, '\0'), json.size(), "m", ""),
                "12 bytes of binary data after the");
  // binary_data_size that disagrees with the shape.
  std::string json6 =
      R"({"inputs":[{"name":"a","datatype":"FP32","shape":[2],"parameters":{"binary_data_size":6}}]})";
  ExpectInvalid(DecodeInferRequest(json6 + std::string(6, '\0'), json6.size(), "m", ""), "needs 8 bytes");
  // Header longer than the body.
  ExpectInvalid(DecodeInferRequest(json, json.size() + 1, "m", ""), "body has only");
  // data and binary_data_size together.
  std::string both =
      R"({"inputs":[{"name":"a","datatype":"UINT8","shape":[1],"data":[1],"parameters":{"binary_data_size":1}}]})";
  ExpectInvalid(DecodeInferRequest(both + "x", both.size(), "m", ""), "both 'data' and binary_data_size");
  std::string neg = R"({"inputs":[{"name":"a","datatype":"UINT8","shape":[1],"parameters":{"binary_data_size":-1}}]})";
  ExpectInvalid(DecodeInferRequest(neg, neg.size(), "m", ""), "non-negative");
}

TEST(DecodeInferRequestTest, HeaderLengthParsing) {
  EXPECT_EQ(*ParseInferenceHeaderLength("123"), 123u);
  EXPECT_FALSE(ParseInferenceHeaderLength("").ok());
  EXPECT_FALSE(ParseInferenceHeaderLength("-1").ok());
  EXPECT_FALSE(ParseInferenceHeaderLength("12a").ok());
}

}  // namespace
}  // namespace ortgpu::serve::protocol
