// End-to-end tests of how `ortgpu doctor` and `ortgpu bench` treat bad and
// careless inputs (issue 11, "Crashes in doctor and bench" and "Tool
// inputs"): the real binary as a child process, on the CPU, with the example
// models. Each asserts what a user sees: the exit code (1: a run failed,
// 2: bad usage; never 134 from an abort) and a message that names the cause.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/serve_process.h"
#include "support/temp_dir.h"

namespace ortgpu::e2e {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

const std::string kAddSub = std::string(ORTGPU_SOURCE_DIR) + "/examples/model_repository/add_sub/1/model.onnx";

using testing_support::TempDir;

TEST(ToolInputsTest, BenchShapeOfTwoToTheFortyElementsIsRefusedBeforeAllocating) {
  Outcome o = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--no-check", "--shape", "INPUT0:1099511627776x4"});
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("above the limit of 4 GiB"));
}

TEST(ToolInputsTest, DoctorShapeOfTwoToTheFortyElementsIsReportedNotAborted) {
  Outcome o = RunOrtgpu({"doctor", "--model", kAddSub, "--shape", "INPUT0:1099511627776x4"});
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_THAT(o.output, HasSubstr("above the limit of 4 GiB"));
}

TEST(ToolInputsTest, BenchShapeNamingNoInputOrDimensionIsAnError) {
  Outcome o = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--no-check", "--shape", "nosuch:3"});
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("'nosuch'"));
  EXPECT_THAT(o.output, HasSubstr("INPUT0"));
}

TEST(ToolInputsTest, BenchZeroBatchDimensionIsAnError) {
  Outcome o = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--no-check", "--shape", "INPUT0:0x4"});
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("at least 1"));
}

TEST(ToolInputsTest, BenchRequestRowsMeasureServedShapedRunsAndNeedIoServed) {
  Outcome bound = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--io", "bound", "--request-rows", "1"});
  EXPECT_EQ(bound.exit_code, 2) << bound.output;
  EXPECT_THAT(bound.output, HasSubstr("--request-rows needs --io served"));
  Outcome served = RunOrtgpu({"bench", kAddSub, "--iterations", "3", "--io", "served", "--batch", "4", "--request-rows", "1"});
  EXPECT_EQ(served.exit_code, 0) << served.output;
  EXPECT_THAT(served.output, HasSubstr("each batch joined from requests of 1 row"));
}

// Issue 30: --device N|all picks the GPUs; without one, the reason, not a CPU run.
TEST(ToolInputsTest, BenchDeviceIsCheckedBeforeAnythingRuns) {
  Outcome cpu = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--device", "0"});
  EXPECT_EQ(cpu.exit_code, 2) << cpu.output;
  EXPECT_NE(cpu.output.find("--device needs --provider cuda"), std::string::npos) << cpu.output;
  Outcome word = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--provider", "cuda", "--device", "first"});
  EXPECT_EQ(word.exit_code, 2) << word.output;
  EXPECT_NE(word.output.find("give a GPU (a CUDA ordinal: 0, 1, ...) or all"), std::string::npos) << word.output;
  Outcome twice = RunOrtgpu(
      {"bench", kAddSub, "--provider", "cuda", "--device", "1", "--cuda-option", "device_id=1"});
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("give the GPU once"), std::string::npos) << twice.output;
  // This machine (CI) has no GPU: all is refused with what is visible.
  Outcome all = RunOrtgpu({"bench", kAddSub, "--iterations", "1", "--provider", "cuda", "--device", "all"});
  if (all.output.find("0 GPUs are visible") != std::string::npos) {
    EXPECT_EQ(all.exit_code, 1) << all.output;
    EXPECT_NE(all.output.find("`ortgpu doctor` says why"), std::string::npos) << all.output;
  }
}

TEST(ToolInputsTest, DoctorDeviceIsAnOrdinalOrAll) {
  Outcome word = RunOrtgpu({"doctor", "--device", "first"});
  EXPECT_EQ(word.exit_code, 2) << word.output;
  EXPECT_NE(word.output.find("give a GPU (a CUDA ordinal: 0, 1, ...) or all"), std::string::npos) << word.output;
  Outcome html = RunOrtgpu({"doctor", "--device", "all", "--html", ::testing::TempDir() + "/doctor_all.html"});
  EXPECT_EQ(html.exit_code, 2) << html.output;
  // Without a GPU (CI), --device all is the one run that says why.
  Outcome all = RunOrtgpu({"doctor", "--device", "all", "--no-copy-test", "--runs", "1"});
  if (all.output.find("GPUs side by side") == std::string::npos) {
    EXPECT_EQ(all.exit_code, 0) << all.output;
    EXPECT_NE(all.output.find("CPU only"), std::string::npos) << all.output;
  }
}

TEST(ToolInputsTest, BenchDurationBeyondAWeekIsBadUsage) {
  Outcome o = RunOrtgpu({"bench", kAddSub, "--duration", "1e308"});
  EXPECT_EQ(o.exit_code, 2) << o.output;
  EXPECT_THAT(o.output, HasSubstr("--duration"));
}

TEST(ToolInputsTest, FifoAsModelIsRefusedInsteadOfBlocking) {
  TempDir dir;
  const std::string fifo = dir.Path("model.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Outcome bench = RunOrtgpu({"bench", fifo, "--iterations", "1"});
  EXPECT_EQ(bench.exit_code, 1) << bench.output;
  EXPECT_THAT(bench.output, HasSubstr("FIFO"));
  Outcome doctor = RunOrtgpu({"doctor", "--model", fifo});
  EXPECT_EQ(doctor.exit_code, 1) << doctor.output;
  EXPECT_THAT(doctor.output, HasSubstr("FIFO"));
}

TEST(ToolInputsTest, BadModelFilesExitOneInDoctorAndBenchAlike) {
  TempDir dir;
  const std::string garbage = dir.File("garbage.onnx", "this is not an ONNX model");
  const std::string missing = dir.Path("missing.onnx");
  for (const std::string& model : {garbage, missing}) {
    Outcome bench = RunOrtgpu({"bench", model, "--iterations", "1"});
    Outcome doctor = RunOrtgpu({"doctor", "--model", model});
    EXPECT_EQ(bench.exit_code, 1) << model << ": " << bench.output;
    EXPECT_EQ(doctor.exit_code, 1) << model << ": " << doctor.output;
  }
}

// Threads refused under an address-space limit surface in bench as
// std::system_error or std::bad_alloc: a message and exit 1, never an abort
// (exit 134) from an exception that escaped or a joinable thread destroyed.
TEST(ToolInputsTest, BenchThatCannotCreateItsThreadsExitsOneWithAMessage) {
  const std::string cmd = std::string("ulimit -v 4000000; exec '") + ORTGPU_BINARY + "' bench '" + kAddSub +
                          "' --iterations 1 --warmup 0 --no-check --no-progress --concurrency 3000 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  const int status = ::pclose(pipe);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << ": " << output;
  EXPECT_EQ(WEXITSTATUS(status), 1) << output;
  EXPECT_THAT(output, HasSubstr("ortgpu bench:"));
}

// Issue 13: --html writes the page beside the JSON on stdout, and the JSON
// has the health layer (a skip on this GPU-less machine, never a failure).
TEST(ToolInputsTest, DoctorHtmlAndJsonTogether) {
  TempDir dir;
  const std::string page = dir.Path("doctor.html");
  Outcome o = RunOrtgpu({"doctor", "--json", "--html", page});
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_THAT(o.output, HasSubstr("\"health\": \"skip\""));
  EXPECT_THAT(o.output, HasSubstr("\"id\": \"provider.tensorrt\""));
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(html, HasSubstr("<title>ortgpu doctor</title>"));
  EXPECT_THAT(html, HasSubstr("2b GPU health and host-device path"));
  Outcome bad = RunOrtgpu({"doctor", "--html", dir.Path("no/such/folder/x.html")});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("--html: cannot write the HTML report"));
}

}  // namespace
}  // namespace ortgpu::e2e
