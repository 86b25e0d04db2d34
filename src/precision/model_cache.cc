#include "precision/model_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "onnx.pb.h"
#include "precision/model_file.h"

namespace ortgpu::precision {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFile = "model.onnx";
constexpr const char* kRecordFile = "record.json";

// Adds the file's bytes to `digest`, in chunks (models are gigabytes).
Status DigestFile(const fs::path& path, ContentDigest& digest) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path.string() + ": " + std::strerror(errno));
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    digest.Add(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return Unavailable("reading " + path.string() + " failed");
  return Status::Ok();
}

Expected<std::string> FileDigest(const fs::path& path) {
  ContentDigest d;
  ORTGPU_RETURN_IF_ERROR(DigestFile(path, d));
  return d.Hex();
}

std::string ReadSmallFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether `bytes` contains `needle` (external data locations are plain
// strings in the model's protobuf).
bool Names(const std::string& bytes, const std::string& needle) {
  return !needle.empty() && bytes.find(needle) != std::string::npos;
}

}  // namespace

void ContentDigest::Add(std::string_view bytes) {
  for (unsigned char c : bytes) {
    a_ = (a_ ^ c) * 0x100000001b3ull;
    b_ = ((b_ ^ c) * 0xff51afd7ed558ccdull);
    b_ ^= b_ >> 29;
  }
  length_ += bytes.size();
}

std::string ContentDigest::Hex() const {
  return fmt::format("{:016x}{:016x}", a_ ^ length_, b_ ^ (length_ * 0x9e3779b97f4a7c15ull));
}

Expected<std::string> ModelFileDigest(const std::string& model_path) {
  const fs::path path(model_path);
  ContentDigest digest;
  ORTGPU_RETURN_IF_ERROR(DigestFile(path, digest));
  // The names of external data files are in the model's bytes; reading the
  // model once more for them costs little next to what the digest read.
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size > (uint64_t{2} << 30)) return digest.Hex();  // over protobuf's limit: no inline names to search
  const std::string bytes = ReadSmallFile(path);
  std::vector<fs::path> beside;
  for (const auto& e : fs::directory_iterator(path.parent_path().empty() ? fs::path(".") : path.parent_path(), ec)) {
    if (e.is_regular_file(ec) && e.path().filename() != path.filename() && Names(bytes, e.path().filename().string())) {
      beside.push_back(e.path());
    }
  }
  std::sort(beside.begin(), beside.end());
  for (const auto& p : beside) {
    digest.Add(p.filename().string());
    ORTGPU_RETURN_IF_ERROR(DigestFile(p, digest));
  }
  return digest.Hex();
}

std::string DefaultModelCacheDir(const Environment& env) {
  if (auto xdg = env.Get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return *xdg + "/ortgpu/models";
  if (auto home = env.Get("HOME"); home && !home->empty()) return *home + "/.cache/ortgpu/models";
  return "";
}

std::optional<CachedModel> ModelCache::Find(const std::string& key) const {
  const fs::path dir = fs::path(root_) / key;
  std::error_code ec;
  if (!fs::is_regular_file(dir / kRecordFile, ec) || !fs::is_regular_file(dir / kModelFile, ec)) return std::nullopt;
  auto record = nlohmann::json::parse(ReadSmallFile(dir / kRecordFile), nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !record.contains("model_bytes") || !record.contains("model_digest")) return std::nullopt;
  const auto size = fs::file_size(dir / kModelFile, ec);
  if (ec || !record["model_bytes"].is_number_unsigned() || size != record["model_bytes"].get<uint64_t>()) {
    return std::nullopt;
  }
  auto digest = FileDigest(dir / kModelFile);
  if (!digest.ok() || !record["model_digest"].is_string() || *digest != record["model_digest"].get<std::string>()) {
    return std::nullopt;
  }
  return CachedModel{(dir / kModelFile).string(), std::move(record)};
}

Expected<CachedModel> ModelCache::Store(const std::string& key, ::onnx::ModelProto& model,
                                        const nlohmann::json& record) const {
  static std::atomic<int> counter{0};
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) return Unavailable(fmt::format("cannot create the model cache folder {}: {}", root_, ec.message()));
  const fs::path staging =
      fs::path(root_) / fmt::format(".tmp-{}-{}-{}", key, ::getpid(), counter.fetch_add(1));
  fs::create_directories(staging, ec);
  if (ec) return Unavailable(fmt::format("cannot write in the model cache folder {}: {}", root_, ec.message()));
  auto fail = [&](const Status& st) -> Status {
    fs::remove_all(staging, ec);
    return st;
  };
  auto written = WriteModelFile(model, (staging / kModelFile).string());
  if (!written.ok()) return fail(written.status().WithContext("writing a converted model to the cache"));
  nlohmann::json full = record;
  full["model_bytes"] = static_cast<uint64_t>(fs::file_size(staging / kModelFile, ec));
  auto digest = FileDigest(staging / kModelFile);
  if (!digest.ok()) return fail(digest.status());
  full["model_digest"] = *digest;
  {
    std::ofstream out(staging / kRecordFile, std::ios::binary);
    out << full.dump(2) << "\n";
    if (!out.flush()) return fail(Unavailable("writing the cache record in " + staging.string() + " failed"));
  }
  const fs::path dir = fs::path(root_) / key;
  fs::remove_all(dir, ec);  // a damaged entry (Find said no)
  fs::rename(staging, dir, ec);
  if (ec) {
    // Another server stored the same entry first: use it.
    fs::remove_all(staging, ec);
    if (auto found = Find(key)) return *found;
    return Unavailable(fmt::format("cannot move a converted model into the model cache folder {}", root_));
  }
  return CachedModel{(dir / kModelFile).string(), std::move(full)};
}

}  // namespace ortgpu::precision
