// FileSystem: the seam between ortgpu and the files of the machine it runs on.
//
// doctor's library search, the model repository and the ELF reader read files
// only through this interface, so tests can describe a machine ("cuDNN in a
// pip folder, a second copy in /usr/lib") with FakeFileSystem
// (tests/fakes/fake_file_system.h) and no real files. Implementations must be
// safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "status/expected.h"

namespace ortgpu {

struct DirEntry {
  std::string name;  // the last path component
  bool is_directory = false;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual bool Exists(const std::string& path) const = 0;
  virtual bool IsDirectory(const std::string& path) const = 0;
  // Reads up to `max_bytes` from the start of the file.
  virtual Expected<std::string> ReadFile(const std::string& path,
                                         uint64_t max_bytes = UINT64_MAX) const = 0;
  // Reads bytes [offset, offset + size) of the file, clipped at its end: the
  // result is shorter than `size` when the file ends first, and empty when
  // offset == file size. Lets readers of large files (a 540 MB cuBLASLt)
  // fetch only the headers and tables they parse.
  // Errors: NotFound/Unavailable when the file cannot be opened or read;
  // InvalidArgument when `offset` lies past the end of the file.
  virtual Expected<std::string> ReadRange(const std::string& path, uint64_t offset,
                                          uint64_t size) const = 0;
  // Entries of a folder, sorted by name, without "." and "..".
  virtual Expected<std::vector<DirEntry>> ListDirectory(const std::string& path) const = 0;
  // The canonical path with links resolved; the input when it cannot resolve.
  virtual std::string RealPath(const std::string& path) const = 0;
  virtual Expected<uint64_t> FileSize(const std::string& path) const = 0;
  // The file's last modification time (ns since the epoch). Fakes that do
  // not model time keep this default, Unimplemented.
  virtual Expected<int64_t> ModifiedNanos(const std::string& path) const {
    return Status(Code::kUnimplemented, "no modification times for " + path);
  }
  // Whether this process may create files in folder `path` (a folder it can
  // write and enter). Fakes that do not model permissions keep this
  // default: every existing folder is writable.
  virtual bool IsWritableDirectory(const std::string& path) const { return IsDirectory(path); }
};

// The process-wide file system of the real machine. Never null.
const FileSystem& RealFileSystem();

// OK when `path` names a regular file (links followed). NotFound when
// nothing is there; FailedPrecondition for a folder, FIFO, socket or device,
// which would block or fail when read as a file (a FIFO given as --model
// would wait forever for a writer). `what` names the file in the message
// ("model"). Uses stat only: never opens the path.
Status CheckRegularFile(const std::string& path, std::string_view what);

// Joins two path parts with one '/'.
std::string JoinPath(const std::string& a, const std::string& b);
// "dir/file.so" -> "dir"; "file.so" -> ".".
std::string DirName(const std::string& path);
// "dir/file.so" -> "file.so".
std::string BaseName(const std::string& path);

}  // namespace ortgpu
