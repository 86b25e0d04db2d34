#include "sys/file_system.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ortgpu {
namespace {

namespace fs = std::filesystem;

class PosixFileSystem final : public FileSystem {
 public:
  bool Exists(const std::string& path) const override {
    std::error_code ec;
    return fs::exists(path, ec);
  }
  bool IsDirectory(const std::string& path) const override {
    std::error_code ec;
    return fs::is_directory(path, ec);
  }
  bool IsWritableDirectory(const std::string& path) const override {
    return IsDirectory(path) && ::access(path.c_str(), W_OK | X_OK) == 0;
  }
  Expected<std::string> ReadFile(const std::string& path, uint64_t max_bytes) const override {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Status(errno == ENOENT ? Code::kNotFound : Code::kUnavailable,
                    "cannot open " + path + ": " + std::strerror(errno));
    }
    std::string data;
    char buf[1 << 16];
    while (data.size() < max_bytes && in) {
      const uint64_t want = std::min<uint64_t>(sizeof(buf), max_bytes - data.size());
      in.read(buf, static_cast<std::streamsize>(want));
      data.append(buf, static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) return Unavailable("error reading " + path);
    return data;
  }
  Expected<std::string> ReadRange(const std::string& path, uint64_t offset,
                                  uint64_t size) const override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return Status(errno == ENOENT ? Code::kNotFound : Code::kUnavailable,
                    "cannot open " + path + ": " + std::strerror(errno));
    }
    // Closes fd on every return path.
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Unavailable("cannot stat " + path + ": " + std::strerror(errno));
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    if (offset > file_size) {
      return InvalidArgument("cannot read " + path + " at offset " + std::to_string(offset) +
                             ": the file has only " + std::to_string(file_size) + " bytes");
    }
    const uint64_t want = std::min(size, file_size - offset);
    std::string data(static_cast<size_t>(want), '\0');
    uint64_t got = 0;
    while (got < want) {
      const ssize_t n = ::pread(fd, data.data() + got, static_cast<size_t>(want - got),
                                static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Unavailable("error reading " + path + ": " + std::strerror(errno));
      if (n == 0) break;  // the file shrank since fstat
      got += static_cast<uint64_t>(n);
    }
    data.resize(static_cast<size_t>(got));
    return data;
  }
  Expected<std::vector<DirEntry>> ListDirectory(const std::string& path) const override {
    std::error_code ec;
    fs::directory_iterator it(path, ec);
    if (ec) return NotFound("cannot list " + path + ": " + ec.message());
    std::vector<DirEntry> out;
    for (const auto& e : it) {
      std::error_code dec;
      out.push_back({e.path().filename().string(), e.is_directory(dec)});
    }
    std::sort(out.begin(), out.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
    return out;
  }
  std::string RealPath(const std::string& path) const override {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf) == nullptr) return path;
    return buf;
  }
  Expected<int64_t> ModifiedNanos(const std::string& path) const override {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return NotFound("cannot stat " + path + ": " + std::strerror(errno));
    return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  }
  Expected<uint64_t> FileSize(const std::string& path) const override {
    std::error_code ec;
    auto n = fs::file_size(path, ec);
    if (ec) return NotFound("cannot stat " + path + ": " + ec.message());
    return static_cast<uint64_t>(n);
  }
};

}  // namespace

const FileSystem& RealFileSystem() {
  static const PosixFileSystem fs;
  return fs;
}

Status CheckRegularFile(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    return Status(err == ENOENT || err == ENOTDIR ? Code::kNotFound : Code::kUnavailable,
                  std::string(what) + " " + path + ": " + std::strerror(err));
  }
  if (S_ISREG(st.st_mode)) return Status::Ok();
  const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                  : "not a regular file";
  return FailedPrecondition(std::string(what) + " " + path + " is " + kind +
                            ", not a regular file; give the path of an .onnx file");
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  if (a.back() == '/') return b.front() == '/' ? a + b.substr(1) : a + b;
  return b.front() == '/' ? a + b : a + "/" + b;
}

std::string DirName(const std::string& path) {
  const auto pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string BaseName(const std::string& path) {
  const auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

}  // namespace ortgpu
