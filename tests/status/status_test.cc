#include "status/status.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ortgpu
