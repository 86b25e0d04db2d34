#include "ort/io_binding.h"

#include <gtest/gtest.h>

#include <thread>

#include "onnx/model_builder.h"
#include "ort/builtin_session.h"

namespace ortgpu {
namespace {

using test::BuiltinSession;

Tensor Image(int64_t batch) {
  Tensor t = Tensor::Zeros("image", DataType::kFloat, {batch, 3, 64, 64});
  for (int64_t i = 0; i < t.element_count(); ++i) t.data_as<float>()[i] = static_cast<float>(i % 11) * 0.05f;
  return t;
}

TEST(IoModeTest, NamesRoundTripAndUnknownListsTheModes) {
  for (IoMode m : {IoMode::kHost, IoMode::kBound, IoMode::kResident, IoMode::kCudaGraph, IoMode::kServed,
                   IoMode::kServedGraph}) {
    EXPECT_EQ(*ParseIoMode(IoModeName(m)), m);
    EXPECT_EQ(NotServedReason(m).empty(), ServedByServe(m)) << IoModeName(m);
  }
  EXPECT_TRUE(NeedsCudaGraphOption(IoMode::kServedGraph));
  EXPECT_FALSE(NeedsCudaGraphOption(IoMode::kServed));
  auto bad = ParseIoMode("device");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cuda-graph"), std::string::npos);
}

TEST(BoundRunnerTest, EveryCpuModeGivesTheSameOutputsAsSessionRun) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  auto expected = s->Run({Image(2)});
  ASSERT_TRUE(expected.ok());
  for (IoMode m : {IoMode::kHost, IoMode::kBound, IoMode::kResident}) {
    BoundRunnerOptions o;
    o.mode = m;
    auto r = BoundRunner::Create(*s, {Image(2)}, o);
    ASSERT_TRUE(r.ok()) << IoModeName(m) << ": " << r.status().ToString();
    EXPECT_EQ((*r)->memory(), m == IoMode::kHost ? "host" : "cpu");
    for (int i = 0; i < 3; ++i) ASSERT_TRUE((*r)->Run().ok());
    auto out = (*r)->FetchOutputs();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].name, "logits");
    EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{2, 10}));
    EXPECT_EQ((*out)[0].data, (*expected)[0].data) << IoModeName(m);
  }
}

// serve feeds each batch to a bound runner by replacing its inputs' bytes
// (SetInput) and fetches only the outputs asked for.
TEST(BoundRunnerTest, NewInputBytesGiveNewOutputsInEveryMode) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  Tensor other = Image(2);
  for (int64_t i = 0; i < other.element_count(); ++i) other.data_as<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  auto expected = s->Run({other});
  ASSERT_TRUE(expected.ok());
  for (IoMode m : {IoMode::kHost, IoMode::kBound, IoMode::kResident}) {
    BoundRunnerOptions o;
    o.mode = m;
    auto r = BoundRunner::Create(*s, {Image(2)}, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE((*r)->Run().ok());
    const Tensor& bytes = other;
    ASSERT_TRUE((*r)->SetInput(0, bytes.data.data(), bytes.byte_size()).ok());
    ASSERT_TRUE((*r)->Run().ok());
    auto out = (*r)->FetchOutputs({"logits"});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].data, (*expected)[0].data) << IoModeName(m);
    auto none = (*r)->FetchOutputs({"not-an-output"});
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE((*r)->SetInput(0, bytes.data.data(), bytes.byte_size() - 4).ok()) << "a size that differs";
  }
}

TEST(BoundRunnerTest, CudaGraphOnTheCpuProviderSaysItNeedsCuda) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  for (IoMode m : {IoMode::kCudaGraph, IoMode::kServedGraph}) {
    BoundRunnerOptions o;
    o.mode = m;
    auto r = BoundRunner::Create(*s, {Image(1)}, o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("I/O mode " + std::string(IoModeName(m)) + " needs --provider cuda"),
              std::string::npos)
        << r.status().message();
  }
}

// --io served runs a batch as serve's instance does: from staging buffers
// (ordinary memory on the CPU), outputs copied to the host every run.
TEST(BoundRunnerTest, ServedModeRunsFromStagingLikeServe) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  Tensor other = Image(2);
  for (int64_t i = 0; i < other.element_count(); ++i) other.data_as<float>()[i] = static_cast<float>(i % 7) * 0.1f;
  auto first = s->Run({Image(2)});
  auto second = s->Run({other});
  ASSERT_TRUE(first.ok() && second.ok());
  BoundRunnerOptions o;
  o.mode = IoMode::kServed;
  auto r = BoundRunner::Create(*s, {Image(2)}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->memory(), "host");
  ASSERT_TRUE((*r)->Run().ok());
  auto out = (*r)->FetchOutputs();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].data, (*first)[0].data);
  ASSERT_TRUE((*r)->SetInput(0, other.data.data(), other.byte_size()).ok());
  ASSERT_TRUE((*r)->Run().ok());
  EXPECT_EQ((*r)->FetchOutputs({"logits"})->at(0).data, (*second)[0].data) << "the next batch comes from the staging";
  EXPECT_EQ((*r)->Describe(), "batch 2");
}

TEST(BoundRunnerTest, AServedShapedRunJoinsTheBatchFromRequestsThroughServesRunner) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  auto expected = s->Run({Image(5)});
  ASSERT_TRUE(expected.ok());
  BoundRunnerOptions o;
  o.mode = IoMode::kServed;
  o.request_rows = 2;  // requests of 2, 2 and 1 rows, joined on every run
  auto r = BoundRunner::Create(*s, {Image(5)}, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->memory(), "host");
  for (int run = 0; run < 2; ++run) {
    ASSERT_TRUE((*r)->Run().ok());
    auto out = (*r)->FetchOutputs();
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].shape, (*expected)[0].shape);
    EXPECT_EQ((*out)[0].data, (*expected)[0].data) << "run " << run;
  }
  auto fixed = (*r)->SetInput(0, nullptr, Image(5).byte_size());
  ASSERT_FALSE(fixed.ok());
  EXPECT_NE(fixed.message().find("joins its requests' rows"), std::string::npos);

  o.mode = IoMode::kBound;
  auto refused = BoundRunner::Create(*s, {Image(5)}, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("need I/O mode served"), std::string::npos) << refused.status().ToString();
}

TEST(BoundRunnerTest, InputsAreValidatedBeforeBinding) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  BoundRunnerOptions o;
  o.mode = IoMode::kBound;
  auto r = BoundRunner::Create(*s, {Tensor::Zeros("image", DataType::kFloat, {1, 3, 32, 64})}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dimension 2 must be 64"), std::string::npos);
}

TEST(BoundRunnerTest, SeveralRunnersShareOneSessionFromSeveralThreads) {
  auto s = BuiltinSession();
  ASSERT_NE(s, nullptr);
  BoundRunnerOptions o;
  o.mode = IoMode::kBound;
  auto a = BoundRunner::Create(*s, {Image(1)}, o);
  auto b = BoundRunner::Create(*s, {Image(1)}, o);
  ASSERT_TRUE(a.ok() && b.ok());
  std::thread t([&] {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE((*b)->Run().ok());
  });
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*a)->Run().ok());
  t.join();
  EXPECT_EQ((*a)->FetchOutputs()->at(0).data, (*b)->FetchOutputs()->at(0).data);
}

}  // namespace
}  // namespace ortgpu
