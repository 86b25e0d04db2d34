#include "status/status.h"

#include <gtest/gtest.h>

#include "status/expected.h"

namespace ortgpu {
namespace {

TEST(StatusTest, EveryHttpStatusComesFromTheOneMapping) {
  EXPECT_EQ(HttpStatusFor(Code::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(Code::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(Code::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(Code::kResourceExhausted), 503);
  EXPECT_EQ(HttpStatusFor(Code::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFor(Code::kInternal), 500);
  // The two HTTP-only refusals no Code stands for.
  EXPECT_EQ(HttpStatusFor(Code::kInvalidArgument, HttpRefusal::kMethodNotAllowed), 405);
  EXPECT_EQ(HttpStatusFor(Code::kResourceExhausted, HttpRefusal::kBodyTooLarge), 413);
  EXPECT_EQ(ExitCodeFor(Code::kInvalidArgument), 2);
  EXPECT_EQ(ExitCodeFor(Code::kInternal), 1);
}

// Issue 25: decisions were taken by searching a status's words. A Reason
// travels with the status through everything that adds to its message.
TEST(StatusTest, Issue25TheReasonSurvivesContextAndNewWords) {
  const Status refused(Code::kInternal, "ORT refused", Reason::kCudaGraphRefused);
  EXPECT_EQ(refused.reason(), Reason::kCudaGraphRefused);
  const Status wrapped = refused.WithContext("loading model m").WithContext("loading the batch-4 session");
  EXPECT_EQ(wrapped.reason(), Reason::kCudaGraphRefused);
  EXPECT_EQ(wrapped.code(), Code::kInternal);
  EXPECT_EQ(wrapped.message(), "loading the batch-4 session: loading model m: ORT refused");
  const Status reworded = wrapped.WithMessage("entirely different words");
  EXPECT_EQ(reworded.reason(), Reason::kCudaGraphRefused);
  EXPECT_EQ(reworded.code(), Code::kInternal);
  EXPECT_EQ(reworded.message(), "entirely different words");
  // Through an Expected as well.
  const Expected<int> failed = refused.WithContext("x");
  EXPECT_EQ(failed.status().reason(), Reason::kCudaGraphRefused);
  // The reason is not part of the text a person reads.
  EXPECT_EQ(refused.ToString(), "internal: ORT refused");
  EXPECT_EQ(ReasonName(refused.reason()), "cuda_graph_refused");
}

TEST(StatusTest, Issue25WordsDoNotMakeAReason) {
  // The words of the old text searches, without the reason, decide nothing.
  EXPECT_EQ(Internal("graph capture failed").reason(), Reason::kNone);
  EXPECT_EQ(InvalidArgument("the graph rejected the inputs while running").reason(), Reason::kNone);
  // An OK status has no reason, even when asked for one.
  EXPECT_EQ(Status(Code::kOk, "", Reason::kCudaGraphRefused).reason(), Reason::kNone);
  EXPECT_EQ(Status::Ok().WithReason(Reason::kInputsRejectedWhileRunning).reason(), Reason::kNone);
  EXPECT_TRUE(Status::Ok().WithMessage("words").ok());
  EXPECT_EQ(Internal("x").WithReason(Reason::kCudaGraphRefused).reason(), Reason::kCudaGraphRefused);
}

}  // namespace
}  // namespace ortgpu
