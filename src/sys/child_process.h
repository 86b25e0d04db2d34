// ChildProcess: a program run as a child (posix_spawn) with its stdout and
// stderr captured through one pipe by a reader thread, so a chatty child
// never blocks on a full pipe. Waits are bounded by deadlines; the destructor
// kills (SIGKILL) and reaps a child still running. Used by `ortgpu tune` to
// run serve, and by the end-to-end tests to run the binary.
//
// One thread owns it; output() and WaitForOutput() may be called from any.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "status/status.h"

namespace ortgpu {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts argv[0] (a path) with argv. REQUIRES: not started yet, argv not empty.
  Status Start(const std::vector<std::string>& argv);
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Waits until `ready(output so far)` holds; false when the child's output
  // ends (it exited) or `timeout` passes first.
  bool WaitForOutput(const std::function<bool(const std::string&)>& ready, std::chrono::milliseconds timeout);
  // Sends `signal_number` to a child not yet reaped.
  void Signal(int signal_number);
  // Waits for the child to exit. Its exit code, 128 + signal when killed by
  // one, or -1 when `timeout` passed first (or none was started).
  int WaitExit(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL when it has not exited within `grace`; the exit
  // code as WaitExit gives it.
  int Stop(std::chrono::milliseconds grace);

  std::string output() const;

 private:
  void ReadLoop();

  pid_t pid_ = -1;
  bool reaped_ = false;
  int read_fd_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::string output_;  // guarded by mu_
  bool eof_ = false;    // guarded by mu_
};

}  // namespace ortgpu
