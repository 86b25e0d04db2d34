// StubKServeServer: a tiny KServe v2 server on raw sockets for perf's
// client and end-to-end tests, where a real server cannot be made to
// misbehave on purpose. It serves the metadata of one model "stub" (one FP32 input of
// [-1, 4], max_batch_size 8; its config as the test gives it), optionally the statistics extension, and
// answers POST .../infer as told: 200 with a fixed body, 500, or never.
// Listens on 127.0.0.1 port 0; one thread accepts, one per connection. The
// destructor shuts every socket down and joins the threads.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ortgpu::testing {

class StubKServeServer {
 public:
  enum class Infer { kOk, kError500, kNeverAnswer };
  struct Options {
    Infer infer = Infer::kOk;
    bool statistics = true;
    bool close_after_answer = false;  // "Connection: close" on every answer, then close
    // The body of GET /v2/models/stub/config.
    std::string config_json = R"({"name":"stub","max_batch_size":8})";
  };

  explicit StubKServeServer(Options options) : options_(options) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listen_fd_, 128);
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }

  ~StubKServeServer() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : connections_) t.join();
    for (int fd : fds_) ::close(fd);
  }

  uint16_t port() const { return port_; }
  int infer_requests() const { return infer_requests_.load(); }
  int connections_accepted() const { return accepted_.load(); }

 private:
  void AcceptLoop() {
    while (!stopping_) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      ++accepted_;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  std::string Response(int status, const std::string& body) const {
    const char* reason = status == 200 ? "OK" : status == 404 ? "Not Found" : "Internal Server Error";
    return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: application/json\r\n" +
           (options_.close_after_answer ? "Connection: close\r\n" : "") + "Content-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  }

  std::string Answer(const std::string& method, const std::string& target) {
    if (method == "POST" && target.ends_with("/infer")) {
      ++infer_requests_;
      if (options_.infer == Infer::kError500) return Response(500, R"({"error":"stub: internal error"})");
      return Response(200, R"({"model_name":"stub","outputs":[{"name":"y","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]})");
    }
    if (target == "/v2/models/stub") {
      return Response(200, R"({"name":"stub","versions":["1"],"platform":"stub","inputs":[{"name":"x","datatype":"FP32","shape":[-1,4]}],)"
                           R"("outputs":[{"name":"y","datatype":"FP32","shape":[-1,4]}]})");
    }
    if (target == "/v2/models/stub/config") return Response(200, options_.config_json);
    if (target == "/v2/models/stub/stats" && options_.statistics) {
      const int n = infer_requests_.load();
      return Response(200, R"({"model_stats":[{"name":"stub","version":"1","inference_count":)" + std::to_string(n) +
                               R"(,"execution_count":)" + std::to_string(n) + R"(,"inference_stats":{"success":{"count":)" +
                               std::to_string(n) + R"(,"ns":)" + std::to_string(n * 10000) + "}}}]}");
    }
    return Response(404, R"({"error":"stub: not found"})");
  }

  void Serve(int fd) {
    std::string in;
    char buf[8192];
    while (true) {
      const size_t head_end = in.find("\r\n\r\n");
      if (head_end == std::string::npos) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      const std::string head = in.substr(0, head_end);
      size_t length = 0;
      for (const char* key : {"\r\nContent-Length: ", "\r\ncontent-length: "}) {
        if (auto p = head.find(key); p != std::string::npos) length = std::stoul(head.substr(p + std::strlen(key)));
      }
      while (in.size() < head_end + 4 + length) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      const std::string method = head.substr(0, head.find(' '));
      const size_t t0 = head.find(' ') + 1;
      const std::string target = head.substr(t0, head.find(' ', t0) - t0);
      in.erase(0, head_end + 4 + length);
      if (method == "POST" && options_.infer == Infer::kNeverAnswer) {
        ++infer_requests_;
        continue;  // read on; the client gives up and closes
      }
      const std::string out = Answer(method, target);
      if (::write(fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) return;
      if (options_.close_after_answer) {
        ::shutdown(fd, SHUT_WR);
        return;
      }
    }
  }

  Options options_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> infer_requests_{0};
  std::atomic<int> accepted_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;                  // guarded by mu_
  std::vector<std::thread> connections_;  // guarded by mu_
};

}  // namespace ortgpu::testing
