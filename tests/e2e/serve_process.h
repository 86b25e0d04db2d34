// ServeProcess: runs the real `ortgpu` binary (ORTGPU_BINARY) as a child
// process for end-to-end tests, with stdout and stderr captured through one
// pipe by a reader thread (so a chatty child never blocks on a full pipe).
// Waits are bounded by deadlines; the destructor kills and reaps a child that
// is still running. Not thread-safe except output(), which any thread may call.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

extern char** environ;

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
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    std::vector<std::string> argv_s = {ORTGPU_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    read_fd_ = fds[0];
    reader_ = std::thread([this] { ReadLoop(); });
  }

  ~ServeProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (reader_.joinable()) reader_.join();
    if (read_fd_ >= 0) ::close(read_fd_);
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Waits for the start-up summary's "HTTP: http://HOST:PORT" line (and the
  // metrics line after it); false when the child exits or `timeout` passes.
  bool WaitForPorts(std::chrono::milliseconds timeout) {
    static const std::regex kHttp(R"(HTTP: http://[^\s]+:(\d+)\n)");
    static const std::regex kMetrics(R"(metrics: (http://[^\s]+:(\d+)/metrics|off)\n)");
    std::unique_lock lock(mu_);
    std::smatch h, m;
    const bool found = cv_.wait_for(lock, timeout, [&] {
      return eof_ || (std::regex_search(output_, h, kHttp) && std::regex_search(output_, m, kMetrics));
    });
    if (!found || !std::regex_search(output_, h, kHttp) || !std::regex_search(output_, m, kMetrics)) return false;
    http_port = static_cast<uint16_t>(std::stoi(h[1].str()));
    metrics_port = m[2].matched ? static_cast<uint16_t>(std::stoi(m[2].str())) : 0;
    static const std::regex kGrpc(R"(gRPC: [^\s]+:(\d+)\n)");
    std::smatch g;
    grpc_port = std::regex_search(output_, g, kGrpc) ? static_cast<uint16_t>(std::stoi(g[1].str())) : 0;
    return true;
  }

  void Signal(int signal_number) {
    if (pid_ > 0 && !reaped_) ::kill(pid_, signal_number);
  }

  // Waits for the child to exit. Its exit code, 128 + signal when killed by
  // one, or -1 when `timeout` passed first.
  int WaitExit(std::chrono::milliseconds timeout) {
    {
      // The pipe reaches EOF when the child (its only writer) exits.
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, timeout, [&] { return eof_; })) return -1;
    }
    int status = 0;
    if (::waitpid(pid_, &status, 0) != pid_) return -1;
    reaped_ = true;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
  }

  std::string output() const {
    std::lock_guard lock(mu_);
    return output_;
  }

  uint16_t http_port = 0;
  uint16_t metrics_port = 0;
  uint16_t grpc_port = 0;  // 0 when gRPC is off

 private:
  void ReadLoop() {
    char buf[4096];
    while (true) {
      const ssize_t n = ::read(read_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      std::lock_guard lock(mu_);
      if (n <= 0) {
        eof_ = true;
        cv_.notify_all();
        return;
      }
      output_.append(buf, static_cast<size_t>(n));
      cv_.notify_all();
    }
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int read_fd_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;  // guarded by mu_
  bool eof_ = false;    // guarded by mu_
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
