// FakeFileSystem: an in-memory tree of folders, files (with contents) and
// symbolic links, for describing a machine in a test ("cuDNN 9.19 in a pip
// folder, 9.14 in /usr/lib/x86_64-linux-gnu") without touching the disk.
//
// Paths are absolute; adding a file or link creates its parent folders.
// Symlinks resolve component by component (relative targets against the
// link's folder), like realpath(3). Fill it before use; the const
// FileSystem methods are then safe from several threads.
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "sys/file_system.h"

namespace ortgpu::testing {

class FakeFileSystem final : public FileSystem {
 public:
  void AddFile(const std::string& path, std::string contents = "") {
    AddParents(path);
    nodes_[Normalize(path)] = Node{Kind::kFile, std::move(contents), ""};
  }
  void AddDirectory(const std::string& path) {
    AddParents(path);
    nodes_[Normalize(path)] = Node{Kind::kDirectory, "", ""};
  }
  // `link` -> `target` (absolute, or relative to the link's folder).
  void AddSymlink(const std::string& link, const std::string& target) {
    AddParents(link);
    nodes_[Normalize(link)] = Node{Kind::kSymlink, "", target};
  }

  // IsWritableDirectory(path) is false for `path` (and everything in it).
  void AddReadOnly(const std::string& path) { read_only_.push_back(Normalize(path)); }

  bool Exists(const std::string& path) const override { return Find(path) != nullptr; }
  bool IsWritableDirectory(const std::string& path) const override {
    if (!IsDirectory(path)) return false;
    const std::string p = Resolve(path, 0);
    for (const auto& ro : read_only_) {
      if (p == ro || p.rfind(ro + "/", 0) == 0) return false;
    }
    return true;
  }
  bool IsDirectory(const std::string& path) const override {
    const Node* n = Find(path);
    return n != nullptr && n->kind == Kind::kDirectory;
  }
  Expected<std::string> ReadFile(const std::string& path, uint64_t max_bytes) const override {
    const Node* n = Find(path);
    if (n == nullptr) return NotFound("cannot open " + path + ": No such file or directory");
    if (n->kind != Kind::kFile) return Unavailable("cannot read " + path + ": Is a directory");
    return n->contents.substr(0, max_bytes < n->contents.size() ? max_bytes : n->contents.size());
  }
  Expected<std::string> ReadRange(const std::string& path, uint64_t offset,
                                  uint64_t size) const override {
    const Node* n = Find(path);
    if (n == nullptr) return NotFound("cannot open " + path + ": No such file or directory");
    if (n->kind != Kind::kFile) return Unavailable("cannot read " + path + ": Is a directory");
    ++range_reads_;
    if (offset > n->contents.size()) {
      return InvalidArgument("cannot read " + path + " at offset " + std::to_string(offset) +
                             ": the file has only " + std::to_string(n->contents.size()) + " bytes");
    }
    const uint64_t left = n->contents.size() - offset;
    const uint64_t take = size < left ? size : left;
    range_bytes_ += take;
    return n->contents.substr(static_cast<size_t>(offset), static_cast<size_t>(take));
  }
  // How many ReadRange calls were made and how many bytes they returned, so a
  // test can check that a reader did not fetch a whole file.
  uint64_t range_reads() const { return range_reads_.load(); }
  uint64_t range_bytes() const { return range_bytes_.load(); }
  Expected<std::vector<DirEntry>> ListDirectory(const std::string& path) const override {
    const std::string dir = Resolve(path, 0);
    auto it = nodes_.find(dir);
    if (it == nodes_.end() || it->second.kind != Kind::kDirectory) {
      return NotFound("cannot list " + path + ": No such file or directory");
    }
    std::vector<DirEntry> out;  // std::map order is name order within one folder
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    for (auto c = nodes_.lower_bound(prefix); c != nodes_.end() && c->first.rfind(prefix, 0) == 0; ++c) {
      const std::string rest = c->first.substr(prefix.size());
      if (rest.empty() || rest.find('/') != std::string::npos) continue;
      out.push_back({rest, IsDirectory(c->first)});
    }
    return out;
  }
  std::string RealPath(const std::string& path) const override {
    const std::string r = Resolve(path, 0);
    return nodes_.count(r) != 0 ? r : path;
  }
  Expected<uint64_t> FileSize(const std::string& path) const override {
    const Node* n = Find(path);
    if (n == nullptr || n->kind != Kind::kFile) return NotFound("cannot stat " + path);
    return static_cast<uint64_t>(n->contents.size());
  }

 private:
  enum class Kind { kFile, kDirectory, kSymlink };
  struct Node {
    Kind kind = Kind::kFile;
    std::string contents;
    std::string target;
  };

  static std::string Normalize(const std::string& path) {
    std::vector<std::string> parts;
    size_t i = 0;
    while (i <= path.size()) {
      size_t j = path.find('/', i);
      if (j == std::string::npos) j = path.size();
      const std::string part = path.substr(i, j - i);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      i = j + 1;
    }
    std::string out;
    for (const auto& p : parts) out += "/" + p;
    return out.empty() ? "/" : out;
  }

  void AddParents(const std::string& path) {
    std::string p = DirName(Normalize(path));
    while (p != "/" && nodes_.count(p) == 0) {
      nodes_[p] = Node{Kind::kDirectory, "", ""};
      p = DirName(p);
    }
    nodes_["/"] = Node{Kind::kDirectory, "", ""};
  }

  // Resolves every symlink along `path`; the result may not exist.
  std::string Resolve(const std::string& path, int depth) const {
    const std::string norm = Normalize(path);
    if (depth > 40) return norm;
    std::string cur;
    size_t i = 1;
    while (i <= norm.size()) {
      size_t j = norm.find('/', i);
      if (j == std::string::npos) j = norm.size();
      if (j > i) {
        cur += "/" + norm.substr(i, j - i);
        auto it = nodes_.find(cur);
        if (it != nodes_.end() && it->second.kind == Kind::kSymlink) {
          const std::string& t = it->second.target;
          cur = Resolve(!t.empty() && t.front() == '/' ? t : DirName(cur) + "/" + t, depth + 1);
        }
      }
      i = j + 1;
    }
    return cur.empty() ? "/" : cur;
  }

  const Node* Find(const std::string& path) const {
    auto it = nodes_.find(Resolve(path, 0));
    return it == nodes_.end() ? nullptr : &it->second;
  }

  std::map<std::string, Node> nodes_;
  std::vector<std::string> read_only_;
  mutable std::atomic<uint64_t> range_reads_{0};
  mutable std::atomic<uint64_t> range_bytes_{0};
};

}  // namespace ortgpu::testing
