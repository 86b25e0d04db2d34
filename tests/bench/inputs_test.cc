#include "bench/inputs.h"

#include <gtest/gtest.h>

#include <fstream>

#include "bench/tensor_files.h"

namespace ortgpu::bench {
namespace {

TensorInfo Input(std::string name, DataType type, std::vector<int64_t> shape, std::vector<std::string> dims = {}) {
  TensorInfo i;
  i.name = std::move(name);
  i.dtype = type;
  i.shape = std::move(shape);
  i.dim_names = std::move(dims);
  if (i.dim_names.empty()) i.dim_names.assign(i.shape.size(), "");
  return i;
}

TEST(InputsTest, SymbolicBatchTakesTheBatchSize) {
  auto in = MakeInputs({Input("image", DataType::kFloat, {-1, 3, 8, 8}, {"batch", "", "", ""})}, {}, 4);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ((*in)[0].shape, (std::vector<int64_t>{4, 3, 8, 8}));
  for (int64_t i = 0; i < (*in)[0].element_count(); ++i) {
    const float v = (*in)[0].data_as<float>()[i];
    ASSERT_GE(v, -1.0f);
    ASSERT_LE(v, 1.0f);
  }
}

TEST(InputsTest, OtherSymbolicDimsNeedAShapeAndTheErrorSaysWhichFlag) {
  const auto ids = Input("input_ids", DataType::kInt64, {-1, -1}, {"batch", "sequence"});
  auto in = MakeInputs({ids}, {}, 1);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("--shape sequence:<size>"), std::string::npos) << in.status().message();
  InputSpec spec;
  ASSERT_TRUE(ParseShapeFlag("sequence:128", spec).ok());
  in = MakeInputs({ids}, spec, 2);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ((*in)[0].shape, (std::vector<int64_t>{2, 128}));
}

TEST(InputsTest, ShapeThatDoesNotFitTheModelIsRejected) {
  InputSpec spec;
  ASSERT_TRUE(ParseShapeFlag("image:1x3x9x8", spec).ok());
  auto in = MakeInputs({Input("image", DataType::kFloat, {-1, 3, 8, 8})}, spec, 1);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("dimension 2 is fixed at 8"), std::string::npos) << in.status().message();
}

TEST(InputsTest, IntRangeKeepsIndexInputsInRange) {
  InputSpec spec;
  ASSERT_TRUE(ParseIntRangeFlag("input_ids:5:9", spec).ok());
  auto in = MakeInputs({Input("input_ids", DataType::kInt64, {1, 1000})}, spec, 1);
  ASSERT_TRUE(in.ok());
  bool saw_lo = false, saw_top = false;
  for (int64_t i = 0; i < 1000; ++i) {
    const int64_t v = (*in)[0].data_as<int64_t>()[i];
    ASSERT_GE(v, 5);
    ASSERT_LT(v, 9);
    saw_lo |= v == 5;
    saw_top |= v == 8;
  }
  EXPECT_TRUE(saw_lo && saw_top);
  EXPECT_FALSE(ParseIntRangeFlag("input_ids:9:5", spec).ok());
  EXPECT_FALSE(ParseIntRangeFlag("input_ids:x:5", spec).ok());
  EXPECT_FALSE(ParseIntRangeFlag("input_ids", spec).ok());
}

TEST(InputsTest, MasksAreOnesAndEveryTypeIsGenerated) {
  std::vector<TensorInfo> infos = {Input("attention_mask", DataType::kInt64, {4})};
  for (DataType t : {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBfloat16, DataType::kInt8,
                     DataType::kUint8, DataType::kInt16, DataType::kUint16, DataType::kInt32, DataType::kUint32,
                     DataType::kUint64, DataType::kBool, DataType::kString, DataType::kComplex64}) {
    infos.push_back(Input("x" + std::to_string(static_cast<int>(t)), t, {2}));
  }
  auto in = MakeInputs(infos, {}, 1);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->size(), infos.size());  // one tensor per input, every type included
  for (int i = 0; i < 4; ++i) EXPECT_EQ((*in)[0].data_as<int64_t>()[i], 1);
  for (size_t k = 0; k < infos.size(); ++k) {
    EXPECT_EQ((*in)[k].name, infos[k].name);
    EXPECT_EQ((*in)[k].dtype, infos[k].dtype) << infos[k].name;
    EXPECT_TRUE(ValidateTensorSize((*in)[k]).ok()) << infos[k].name;
  }
}

TEST(InputsTest, SameSeedSameBytes) {
  const auto info = Input("x", DataType::kFloat, {16});
  InputSpec a, b;
  b.seed = 2;
  EXPECT_EQ((*MakeInputs({info}, a, 1))[0].data, (*MakeInputs({info}, a, 1))[0].data);
  EXPECT_NE((*MakeInputs({info}, a, 1))[0].data, (*MakeInputs({info}, b, 1))[0].data);
}

TEST(InputsTest, FileInputIsTiledToTheBatch) {
  Tensor t = Tensor::Zeros("x", DataType::kInt32, {2, 2});
  for (int i = 0; i < 4; ++i) t.data_as<int32_t>()[i] = i;
  const std::string path = testing::TempDir() + "/inputs_test_x.npy";
  std::ofstream(path, std::ios::binary) << *SerializeNpy(t);
  InputSpec spec;
  ASSERT_TRUE(ParseInputFlag("x=" + path, spec).ok());
  auto in = MakeInputs({Input("x", DataType::kInt32, {-1, 2})}, spec, 3);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_EQ((*in)[0].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ((*in)[0].data_as<int32_t>()[4], 0);  // row 2 repeats row 0
  EXPECT_EQ((*in)[0].data_as<int32_t>()[5], 1);
  auto wrong_type = MakeInputs({Input("x", DataType::kFloat, {-1, 2})}, spec, 1);
  EXPECT_NE(wrong_type.status().message().find("holds int32"), std::string::npos);
}

TEST(InputsTest, UnknownNamesListTheModelsInputs) {
  InputSpec spec;
  ASSERT_TRUE(ParseIntRangeFlag("token_ids:0:10", spec).ok());
  auto in = MakeInputs({Input("input_ids", DataType::kInt64, {1})}, spec, 1);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("its inputs: input_ids"), std::string::npos) << in.status().message();
  EXPECT_FALSE(ParseInputFlag("novalue", spec).ok());
  EXPECT_FALSE(ParseShapeFlag("1x3", spec).ok());
}

TEST(InputsTest, Issue9AShapeNamingNothingOrAnUnsizedDimIsAnErrorOfTheFlag) {
  const auto ids = Input("input_ids", DataType::kInt64, {-1, -1}, {"batch", "sequence"});
  InputSpec spec;
  ASSERT_TRUE(ParseShapeFlag("nosuch:3", spec).ok());
  auto in = MakeInputs({ids}, spec, 1);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("--shape nosuch:3: the model has no input or symbolic dimension 'nosuch'; "
                                       "its inputs: input_ids (?x?: batch, sequence)"),
            std::string::npos)
      << in.status().message();
  InputSpec zero;
  ASSERT_TRUE(ParseShapeFlag("batch:0", zero).ok());
  in = MakeInputs({ids}, zero, 1);
  ASSERT_FALSE(in.ok());
  EXPECT_NE(in.status().message().find("takes one size of at least 1"), std::string::npos) << in.status().message();
  // The text is the one doctor prints for the same flag (ort/random_inputs.h).
  InputSpec bad;
  ASSERT_TRUE(ParseShapeFlag("input_ids:1x2x3", bad).ok());
  EXPECT_NE(MakeInputs({ids}, bad, 1).status().message().find("--shape input_ids:1x2x3 gives input 'input_ids'"),
            std::string::npos);
}

}  // namespace
}  // namespace ortgpu::bench
