// ServeProcess: runs the real `ortgpu` binary (ORTGPU_BINARY) as a child
// process for end-to-end tests (sys/child_process.h: stdout and stderr
// captured through one pipe by a reader thread, waits bounded by deadlines,
// a child still running killed and reaped by the destructor). Not
// thread-safe except output(), which any thread may call.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sys/child_process.h"

namespace ortgpu::e2e {

class ServeProcess {
 public:
  // Starts `ortgpu ARGS...`; a `serve` without --grpc-port gets
  // --grpc-port 0, so parallel tests never share a port. REQUIRES: the
  // binary exists.
  explicit ServeProcess(std::vector<std::string> args) {
    if (!args.empty() && args[0] == "serve" && std::find(args.begin(), args.end(), "--grpc-port") == args.end()) {
      args.insert(args.end(), {"--grpc-port", "0"});
    }
    args.insert(args.begin(), ORTGPU_BINARY);
    (void)child_.Start(args);  // started() says whether it did
  }

  bool started() const { return child_.started(); }
  pid_t pid() const { return child_.pid(); }

  // Waits for the start-up summary's "HTTP: http://HOST:PORT" line (and the
  // metrics line after it); false when the child exits or `timeout` passes.
  bool WaitForPorts(std::chrono::milliseconds timeout) {
    static const std::regex kHttp(R"(HTTP: http://[^\s]+:(\d+)\n)");
    static const std::regex kMetrics(R"(metrics: (http://[^\s]+:(\d+)/metrics|off)\n)");
    std::smatch h, m;
    const auto both = [&](const std::string& out) { return std::regex_search(out, h, kHttp) && std::regex_search(out, m, kMetrics); };
    if (!child_.WaitForOutput(both, timeout)) return false;
    const std::string out = child_.output();
    if (!both(out)) return false;
    http_port = static_cast<uint16_t>(std::stoi(h[1].str()));
    metrics_port = m[2].matched ? static_cast<uint16_t>(std::stoi(m[2].str())) : 0;
    static const std::regex kGrpc(R"(gRPC: [^\s]+:(\d+)\n)");
    std::smatch g;
    grpc_port = std::regex_search(out, g, kGrpc) ? static_cast<uint16_t>(std::stoi(g[1].str())) : 0;
    return true;
  }

  void Signal(int signal_number) { child_.Signal(signal_number); }

  // Waits for the child to exit. Its exit code, 128 + signal when killed by
  // one, or -1 when `timeout` passed first.
  int WaitExit(std::chrono::milliseconds timeout) { return child_.WaitExit(timeout); }

  std::string output() const { return child_.output(); }

  uint16_t http_port = 0;
  uint16_t metrics_port = 0;
  uint16_t grpc_port = 0;  // 0 when gRPC is off

 private:
  ChildProcess child_;
};

// What a command that runs to its end left: its exit code and everything it
// wrote to stdout and stderr.
struct Outcome {
  int exit_code = -1;
  std::string output;
};

// Runs `ortgpu ARGS...` to its end (at most two minutes).
inline Outcome RunOrtgpu(const std::vector<std::string>& args) {
  ServeProcess p(args);
  EXPECT_TRUE(p.started());
  Outcome o;
  o.exit_code = p.WaitExit(std::chrono::seconds(120));
  o.output = p.output();
  return o;
}

}  // namespace ortgpu::e2e
