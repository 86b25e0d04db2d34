// The cache of converted models (`ortgpu serve` with a precision parameter,
// docs/SERVING.md "Precision"): a folder per conversion under a root the
// server owns (--model-cache-dir, never the user's model folder), named by
// a key over the source model's bytes (external data included) and the
// conversion's settings. An entry holds the converted model ("model.onnx",
// with "model.onnx.data" past 2 GB) and "record.json": what the conversion
// and its accuracy check found, plus the converted file's size and digest.
//
// Entries are made in a private temporary folder and renamed into place, and
// record.json is written last, so a reader sees a whole entry or none; an
// entry whose record is missing, unreadable, or whose model no longer has
// the recorded size and digest (a partial copy, a disk error, an edit) is a
// miss, and storing replaces it. Several servers may share a root: the
// rename decides which copy of an entry stays, and both are the same.
//
// Thread-compatible: one loading thread per entry (the server loads a model
// version on one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "status/expected.h"
#include "sys/environment.h"

namespace onnx {
class ModelProto;
}

namespace ortgpu::precision {

// Bumped whenever the converter changes what it writes for the same input:
// older entries are then misses.
inline constexpr int kConverterVersion = 2;  // 2: attention and layer norm fused on CUDA

// A 128-bit digest of bytes, as 32 hex digits. Not cryptographic: it names
// cache entries and detects changed or damaged files.
class ContentDigest {
 public:
  void Add(std::string_view bytes);
  std::string Hex() const;

 private:
  uint64_t a_ = 0xcbf29ce484222325ull;  // FNV-1a 64
  uint64_t b_ = 0x9e3779b97f4a7c15ull;  // a multiply-rotate lane
  uint64_t length_ = 0;
};

// The digest of a model file and of the files beside it that it names (its
// external data: a file of the model's folder whose name appears in the
// model's bytes). Errors: the model file cannot be read.
Expected<std::string> ModelFileDigest(const std::string& model_path);

// ${XDG_CACHE_HOME:-$HOME/.cache}/ortgpu/models; "" when neither is set.
std::string DefaultModelCacheDir(const Environment& env = RealEnvironment());

struct CachedModel {
  std::string model_path;  // the converted model inside the entry
  nlohmann::json record;   // what Store was given
};

class ModelCache {
 public:
  // `root` need not exist (Store makes it).
  explicit ModelCache(std::string root) : root_(std::move(root)) {}

  // The entry under `key` when it is whole (see the header comment);
  // nullopt otherwise.
  std::optional<CachedModel> Find(const std::string& key) const;

  // Writes `model` and `record` as the entry under `key`, replacing an
  // entry that is there. `model` may be changed (large tensors moved to
  // external data, precision/model_file.h). Errors: the root or the entry
  // cannot be written (the message names the folder and the reason).
  Expected<CachedModel> Store(const std::string& key, ::onnx::ModelProto& model, const nlohmann::json& record) const;

  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace ortgpu::precision
