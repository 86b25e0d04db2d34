// serve's flags table (src/cli/serve_flags.h) against serve::ServeOptions:
// each flag's default, as parsed and as --help shows it, is the struct's
// (issue 29: defaults defined once), and the old --grpc-threads still sets
// the gRPC pollers.
#include "cli/serve_flags.h"

#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ortgpu::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ServeFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { AddServeFlags(*cmd_, flags_); }

  // Parses `ortgpu serve ARGS...`.
  void Parse(std::vector<std::string> args) {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    reversed.push_back("serve");
    app_.parse(reversed);
  }

  std::string DefaultShown(const std::string& flag) { return cmd_->get_option(flag)->get_default_str(); }

  CLI::App app_{"ortgpu"};
  CLI::App* cmd_ = app_.add_subcommand("serve");
  ServeFlags flags_;
  const serve::ServeOptions defaults_;
};

TEST_F(ServeFlagsTest, ParsedDefaultsAreTheOptionsStructs) {
  Parse({"--model", "m.onnx"});
  const serve::ServeOptions& o = flags_.options;
  EXPECT_EQ(o.core.model_file, "m.onnx");
  EXPECT_EQ(o.http.host, defaults_.http.host);
  EXPECT_EQ(o.http.port, defaults_.http.port);
  EXPECT_EQ(o.grpc_port, defaults_.grpc_port);
  EXPECT_EQ(o.metrics_port, defaults_.metrics_port);
  EXPECT_EQ(o.http.max_body_bytes, defaults_.http.max_body_bytes);
  EXPECT_EQ(o.http.request_timeout, defaults_.http.request_timeout);
  EXPECT_EQ(o.http.threads, defaults_.http.threads);
  EXPECT_EQ(o.http.busy_poll, defaults_.http.busy_poll);
  EXPECT_EQ(o.http.max_connections, defaults_.http.max_connections);
  EXPECT_EQ(o.http.access_log, defaults_.http.access_log);
  EXPECT_EQ(o.grpc_threads, defaults_.grpc_threads);
  EXPECT_EQ(o.grpc_poller_threads, defaults_.grpc_poller_threads);
  EXPECT_EQ(o.drain_timeout, defaults_.drain_timeout);
  EXPECT_EQ(o.core.model_control, defaults_.core.model_control);
  EXPECT_EQ(o.core.poll_interval_ms, defaults_.core.poll_interval_ms);
  EXPECT_EQ(o.core.max_output_bytes, defaults_.core.max_output_bytes);
  EXPECT_EQ(o.core.loader.busy_poll_ns, defaults_.core.loader.busy_poll_ns);
  EXPECT_EQ(o.core.loader.strict_warmup, defaults_.core.loader.strict_warmup);
  EXPECT_EQ(o.core.loader.require_gpu, defaults_.core.loader.require_gpu);
  EXPECT_EQ(o.core.memory_plan.enabled, defaults_.core.memory_plan.enabled);
  EXPECT_EQ(o.core.memory_plan.margin_percent, defaults_.core.memory_plan.margin_percent);
}

// Busy polling is on by default (issue 29), with one window for the network
// threads and the instance workers, as the one flag sets both.
TEST_F(ServeFlagsTest, BusyPollingIsOnByDefaultWithOneWindowForThreadsAndWorkers) {
  EXPECT_EQ(defaults_.http.busy_poll, serve::kDefaultBusyPoll);
  EXPECT_GT(defaults_.http.busy_poll.count(), 0);
  EXPECT_EQ(defaults_.core.loader.busy_poll_ns, std::chrono::nanoseconds(defaults_.http.busy_poll).count());
}

TEST_F(ServeFlagsTest, HelpShowsTheOptionsStructsDefaults) {
  EXPECT_EQ(DefaultShown("--host"), defaults_.http.host);
  EXPECT_EQ(DefaultShown("--http-port"), std::to_string(defaults_.http.port));
  EXPECT_EQ(DefaultShown("--grpc-port"), std::to_string(defaults_.grpc_port));
  EXPECT_EQ(DefaultShown("--metrics-port"), std::to_string(defaults_.metrics_port));
  EXPECT_EQ(DefaultShown("--max-body-bytes"), std::to_string(defaults_.http.max_body_bytes));
  EXPECT_EQ(DefaultShown("--request-timeout-ms"), std::to_string(defaults_.http.request_timeout.count()));
  EXPECT_EQ(DefaultShown("--http-threads"), std::to_string(defaults_.http.threads));
  EXPECT_EQ(DefaultShown("--grpc-poller-threads"), std::to_string(defaults_.grpc_poller_threads));
  EXPECT_EQ(DefaultShown("--busy-poll-us"), std::to_string(defaults_.http.busy_poll.count()));
  EXPECT_EQ(DefaultShown("--drain-timeout-ms"), std::to_string(defaults_.drain_timeout.count()));
  EXPECT_EQ(DefaultShown("--max-connections"), std::to_string(defaults_.http.max_connections));
  EXPECT_EQ(DefaultShown("--max-output-bytes"), std::to_string(defaults_.core.max_output_bytes));
  EXPECT_EQ(DefaultShown("--poll-interval-ms"), std::to_string(defaults_.core.poll_interval_ms));
  EXPECT_EQ(DefaultShown("--model-control"), serve::ModelControlModeName(defaults_.core.model_control));
  EXPECT_EQ(DefaultShown("--access-log"), serve::AccessLogFormatName(defaults_.http.access_log));
  EXPECT_EQ(DefaultShown("--gpu-memory-plan"), defaults_.core.memory_plan.enabled ? "on" : "off");
  EXPECT_EQ(DefaultShown("--gpu-memory-margin"), "10%");
  // What a user reads: Triton's ports, 64 MiB, 60 s.
  const std::string help = cmd_->help();
  EXPECT_THAT(help, HasSubstr("--http-port UINT:INT in [0 - 65535]=8000"));
  EXPECT_THAT(help, HasSubstr("--grpc-port INT:INT in [-1 - 65535]=8001"));
  EXPECT_THAT(help, HasSubstr("=67108864"));
  EXPECT_THAT(help, HasSubstr("--request-timeout-ms INT:INT in [0 - 86400000]=60000"));
  // Repeatable flags start empty and show no default.
  EXPECT_THAT(help, Not(HasSubstr("=[]")));
}

TEST_F(ServeFlagsTest, FlagsSetTheFieldsTheyName) {
  Parse({"--model", "m.onnx", "--grpc-poller-threads", "3", "--request-timeout-ms", "250", "--busy-poll-us", "40",
         "--model-control", "poll", "--access-log", "json", "--gpu-memory-plan", "off", "--gpu-memory-margin", "12.5%",
         "--drain-timeout-ms", "7", "--grpc-port", "-1"});
  const serve::ServeOptions& o = flags_.options;
  EXPECT_EQ(o.grpc_poller_threads, 3);
  EXPECT_EQ(o.grpc_threads, defaults_.grpc_threads);  // the encoding pool is another one
  EXPECT_EQ(o.http.request_timeout.count(), 250);
  EXPECT_EQ(o.http.busy_poll.count(), 40);
  EXPECT_EQ(o.core.loader.busy_poll_ns, 40'000);
  EXPECT_EQ(o.core.model_control, serve::ModelControlMode::kPoll);
  EXPECT_EQ(o.http.access_log, serve::AccessLogFormat::kJson);
  EXPECT_FALSE(o.core.memory_plan.enabled);
  EXPECT_EQ(o.core.memory_plan.margin_percent, 12.5);
  EXPECT_EQ(o.drain_timeout.count(), 7);
  EXPECT_EQ(o.grpc_port, -1);
}

TEST_F(ServeFlagsTest, DeprecatedGrpcThreadsSetsThePollersAndWarns) {
  ::testing::internal::CaptureStderr();
  Parse({"--model", "m.onnx", "--grpc-threads", "1"});
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(flags_.options.grpc_poller_threads, 1);
  EXPECT_EQ(flags_.options.grpc_threads, defaults_.grpc_threads);
  EXPECT_THAT(err, HasSubstr("--grpc-threads is deprecated"));
  EXPECT_THAT(err, HasSubstr("--grpc-poller-threads"));
}

TEST_F(ServeFlagsTest, TheNewNameDoesNotWarn) {
  ::testing::internal::CaptureStderr();
  Parse({"--model", "m.onnx", "--grpc-poller-threads", "1"});
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST_F(ServeFlagsTest, BadValuesAreParseErrors) {
  EXPECT_THROW(Parse({"--gpu-memory-margin", "95"}), CLI::ParseError);
  EXPECT_THROW(Parse({"--model-control", "sometimes"}), CLI::ParseError);
}

}  // namespace
}  // namespace ortgpu::cli
