// ChildProcess (sys/child_process.h) with /bin/sh as the child: output
// captured, waits on output and on exit, exit codes and signals.
#include "sys/child_process.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace ortgpu {
namespace {

using namespace std::chrono_literals;

TEST(ChildProcessTest, CapturesOutputAndExitCode) {
  ChildProcess child;
  ASSERT_TRUE(child.Start({"/bin/sh", "-c", "echo ready; echo oops >&2; exit 3"}).ok());
  EXPECT_TRUE(child.WaitForOutput([](const std::string& out) { return out.find("ready\n") != std::string::npos; }, 60s));
  EXPECT_EQ(child.WaitExit(60s), 3);
  EXPECT_NE(child.output().find("oops"), std::string::npos) << child.output();
}

TEST(ChildProcessTest, WaitForOutputIsFalseWhenTheChildExitsFirst) {
  ChildProcess child;
  ASSERT_TRUE(child.Start({"/bin/sh", "-c", "echo something else"}).ok());
  EXPECT_FALSE(child.WaitForOutput([](const std::string& out) { return out.find("never") != std::string::npos; }, 60s));
  EXPECT_EQ(child.WaitExit(60s), 0);
}

TEST(ChildProcessTest, StopEndsARunningChild) {
  ChildProcess child;
  ASSERT_TRUE(child.Start({"/bin/sh", "-c", "echo up; exec sleep 600"}).ok());
  ASSERT_TRUE(child.WaitForOutput([](const std::string& out) { return out.find("up\n") != std::string::npos; }, 60s));
  EXPECT_EQ(child.Stop(60s), 128 + SIGTERM);
}

TEST(ChildProcessTest, AMissingBinaryIsAnErrorThatNamesIt) {
  ChildProcess child;
  const Status st = child.Start({"/nonexistent/ortgpu"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/ortgpu"), std::string::npos) << st.message();
  EXPECT_FALSE(child.started());
}

}  // namespace
}  // namespace ortgpu
