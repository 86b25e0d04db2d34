#include "bench/tensor_files.h"

#include <gtest/gtest.h>

#include <fstream>

#include "onnx.pb.h"

namespace ortgpu::bench {
namespace {

// Bytes numpy.save writes for np.arange(6, dtype=np.float32).reshape(2, 3).
std::string NumpyFloat2x3() {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size());
  out += '\0';
  out += header;
  for (int i = 0; i < 6; ++i) {
    float f = static_cast<float>(i);
    out.append(reinterpret_cast<const char*>(&f), 4);
  }
  return out;
}

TEST(NpyTest, ReadsWhatNumpySaveWrites) {
  auto t = ParseNpy(NumpyFloat2x3(), "x");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->dtype, DataType::kFloat);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->data_as<float>()[5], 5.0f);
}

TEST(NpyTest, RoundTripsEveryNumericType) {
  for (DataType type : {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kInt8, DataType::kUint8,
                        DataType::kInt16, DataType::kUint16, DataType::kInt32, DataType::kUint32, DataType::kInt64,
                        DataType::kUint64, DataType::kBool}) {
    Tensor t = Tensor::Zeros("t", type, {3});
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(i % 2);
    auto bytes = SerializeNpy(t);
    ASSERT_TRUE(bytes.ok()) << ShortName(type);
    auto back = ParseNpy(*bytes, "t");
    ASSERT_TRUE(back.ok()) << ShortName(type) << ": " << back.status().ToString();
    EXPECT_EQ(back->dtype, type);
    EXPECT_EQ(back->data, t.data) << ShortName(type);
  }
  Tensor scalar = Tensor::Zeros("s", DataType::kInt64, {});
  auto back = ParseNpy(*SerializeNpy(scalar), "s");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->shape.empty());
}

TEST(NpyTest, BigEndianIsRefusedWithTheFix) {
  std::string bytes = NumpyFloat2x3();
  bytes.replace(bytes.find("<f4"), 3, ">f4");
  auto t = ParseNpy(bytes, "x");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("big-endian"), std::string::npos) << t.status().message();
}

TEST(NpyTest, TruncatedDataSaysHowManyBytesWereExpected) {
  std::string bytes = NumpyFloat2x3();
  bytes.resize(bytes.size() - 4);
  auto t = ParseNpy(bytes, "x");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("needs 24"), std::string::npos) << t.status().message();
  EXPECT_FALSE(ParseNpy("not numpy", "x").ok());
}

TEST(TensorProtoTest, ReadsRawDataAndTypedFields) {
  Tensor t = Tensor::Zeros("ids", DataType::kInt64, {2});
  t.data_as<int64_t>()[1] = 42;
  auto raw = ParseTensorProto(SerializeTensorProto(t), "fallback");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->name, "ids");
  EXPECT_EQ(raw->data_as<int64_t>()[1], 42);

  ::onnx::TensorProto p;
  p.set_data_type(static_cast<int>(DataType::kFloat));
  p.add_dims(3);
  for (float f : {0.5f, 1.5f, -2.0f}) p.add_float_data(f);
  auto typed = ParseTensorProto(p.SerializeAsString(), "x");
  ASSERT_TRUE(typed.ok()) << typed.status().ToString();
  EXPECT_EQ(typed->name, "x");
  EXPECT_EQ(typed->data_as<float>()[2], -2.0f);

  ::onnx::TensorProto h;
  h.set_data_type(static_cast<int>(DataType::kFloat16));
  h.add_dims(1);
  h.add_int32_data(FloatToHalf(3.0f));
  auto half = ParseTensorProto(h.SerializeAsString(), "h");
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(HalfToFloat(half->data_as<uint16_t>()[0]), 3.0f);
}

TEST(TensorProtoTest, WrongValueCountAndExternalDataAreClearErrors) {
  ::onnx::TensorProto p;
  p.set_data_type(static_cast<int>(DataType::kFloat));
  p.add_dims(4);
  p.add_float_data(1.0f);
  auto t = ParseTensorProto(p.SerializeAsString(), "x");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("holds 1 values, expected 4"), std::string::npos) << t.status().message();
  p.set_data_location(::onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(ParseTensorProto(p.SerializeAsString(), "x").status().code(), Code::kUnimplemented);
}

TEST(TensorFileTest, PicksTheFormatByExtension) {
  const std::string dir = testing::TempDir();
  std::ofstream(dir + "/x.npy", std::ios::binary) << NumpyFloat2x3();
  auto t = ReadTensorFile(dir + "/x.npy", "image");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->name, "image");
  std::ofstream(dir + "/x.txt") << "1 2 3";
  EXPECT_NE(ReadTensorFile(dir + "/x.txt", "image").status().message().find(".npy"), std::string::npos);
  EXPECT_EQ(ReadTensorFile(dir + "/missing.npy", "image").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace ortgpu::bench
