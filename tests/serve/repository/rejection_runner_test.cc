#include "serve/repository/rejection_runner.h"

#include <gtest/gtest.h>

#include "ort/ort_status.h"

namespace ortgpu::serve {
namespace {

// Fails every run with `failure`.
class FailingRunner : public InstanceRunner {
 public:
  explicit FailingRunner(Status failure) : failure_(std::move(failure)) {}
  Expected<std::vector<Tensor>> Run(const std::vector<Tensor>&) override { return failure_; }

 private:
  Status failure_;
};

// As ort/ort_status.cc makes it from ORT's failure.
const Status kRejected(Code::kInvalidArgument,
                       "running model m/1/model.onnx: the graph " + std::string(kRunTimeRejection) +
                           ": Non-zero status code returned while running Add node. Name:'skip_add' "
                           "Status Message: Attempting to broadcast an axis by a dimension other than 1",
                       Reason::kInputsRejectedWhileRunning);

TEST(RejectionRunnerTest, Issue9ARunTimeRejectionNamesEachInputWithItsShapeAndTheDeclaredOne) {
  RejectionExplainingRunner runner(std::make_unique<FailingRunner>(kRejected),
                                   {{"x", "FP32", {-1, 1, -1, -1}}, {"scale", "FP32", {1}}});
  const std::vector<Tensor> inputs = {Tensor::Zeros("x", DataType::kFloat, {1, 1, 100, 150}),
                                      Tensor::Zeros("scale", DataType::kFloat, {1})};
  auto out = runner.Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  const std::string& m = out.status().message();
  EXPECT_EQ(m.rfind("inputs 'x' 1x1x100x150 (the model declares ?x1x?x?), 'scale' 1 (the model declares 1) fit "
                    "the declared shapes",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("Name:'skip_add'"), std::string::npos) << m;
  EXPECT_NE(m.find(kRejectionAdvice), std::string::npos) << m;
  // Through RunBatch (the scheduler's path) as well, with the batch's rows.
  int64_t ready = 0;
  std::vector<const std::vector<Tensor>*> batch = {&inputs, &inputs};
  auto batched = runner.RunBatch(batch, 2, RealClock(), ready);
  ASSERT_FALSE(batched.ok());
  EXPECT_NE(batched.status().message().find("in a batch of 4 rows"), std::string::npos) << batched.status().message();
}

// Issue 25: a failure was taken for a rejection when its message held the
// words of one. The reason decides, whatever the words.
TEST(RejectionRunnerTest, Issue25TheReasonDecidesNotTheWords) {
  const std::vector<Tensor> inputs = {Tensor::Zeros("x", DataType::kFloat, {2, 3})};
  // The old trigger words without the reason: unchanged.
  const Status lookalike = InvalidArgument("input 'x': the graph " + std::string(kRunTimeRejection) + " (quoted)");
  RejectionExplainingRunner plain(std::make_unique<FailingRunner>(lookalike), {{"x", "FP32", {-1, 3}}});
  auto out = plain.Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), lookalike.message());
  EXPECT_EQ(out.status().reason(), Reason::kNone);
  // The reason with other words: explained, and still a rejection.
  const Status rejected(Code::kInvalidArgument, "a Reshape node cannot take 2x3", Reason::kInputsRejectedWhileRunning);
  RejectionExplainingRunner explained(std::make_unique<FailingRunner>(rejected), {{"x", "FP32", {-1, 3}}});
  out = explained.Run(inputs);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(out.status().reason(), Reason::kInputsRejectedWhileRunning);
  EXPECT_EQ(out.status().message().rfind("input 'x' 2x3 (the model declares ?x3) fits the declared shapes", 0), 0u)
      << out.status().message();
  EXPECT_NE(out.status().message().find("a Reshape node cannot take 2x3"), std::string::npos);
}

TEST(RejectionRunnerTest, OtherFailuresPassUnchanged) {
  for (const Status& failure : {Internal("CUDA failure 700"), InvalidArgument("input 'x' has type int64"),
                                ResourceExhausted("out of memory")}) {
    RejectionExplainingRunner runner(std::make_unique<FailingRunner>(failure), {});
    auto out = runner.Run({Tensor::Zeros("x", DataType::kFloat, {1})});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), failure.code());
    EXPECT_EQ(out.status().message(), failure.message());
  }
}

}  // namespace
}  // namespace ortgpu::serve
