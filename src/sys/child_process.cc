#include "sys/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace ortgpu {

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (reader_.joinable()) reader_.join();
  if (read_fd_ >= 0) ::close(read_fd_);
}

Status ChildProcess::Start(const std::vector<std::string>& argv_in) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("cannot create a pipe: ") + std::strerror(errno));
  std::vector<std::string> argv_s = argv_in;
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    pid_ = -1;
    return NotFound("cannot start " + argv_s[0] + ": " + std::strerror(rc));
  }
  read_fd_ = fds[0];
  reader_ = std::thread([this] { ReadLoop(); });
  return Status::Ok();
}

bool ChildProcess::WaitForOutput(const std::function<bool(const std::string&)>& ready,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return eof_ || ready(output_); });
  return ready(output_);
}

void ChildProcess::Signal(int signal_number) {
  if (pid_ > 0 && !reaped_) ::kill(pid_, signal_number);
}

int ChildProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  {
    // The pipe reaches EOF when the child (its only writer) exits.
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return eof_; })) return -1;
  }
  int status = 0;
  if (reaped_ || ::waitpid(pid_, &status, 0) != pid_) return -1;
  reaped_ = true;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  Signal(SIGTERM);
  const int code = WaitExit(grace);
  if (code != -1 || reaped_) return code;
  Signal(SIGKILL);
  return WaitExit(std::chrono::minutes(1));
}

std::string ChildProcess::output() const {
  std::lock_guard lock(mu_);
  return output_;
}

void ChildProcess::ReadLoop() {
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

}  // namespace ortgpu
