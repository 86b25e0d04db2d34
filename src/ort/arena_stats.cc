#include "ort/arena_stats.h"

#include <cstdlib>

#include <onnxruntime_cxx_api.h>

#include "ort/ort_status.h"

namespace ortgpu {
namespace {

Status ReadNumber(const std::map<std::string, std::string>& pairs, const char* key, uint64_t& out) {
  auto it = pairs.find(key);
  if (it == pairs.end()) return Status::Ok();
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') {
    return InvalidArgument(std::string("ONNX Runtime's allocator statistics give ") + key + " as '" + it->second +
                           "', not a byte count");
  }
  // A negative figure is ORT's "none" (Limit -1: the arena has no bound).
  out = v < 0 ? 0 : static_cast<uint64_t>(v);
  return Status::Ok();
}

}  // namespace

Expected<std::optional<ArenaStats>> ParseArenaStats(const std::map<std::string, std::string>& pairs) {
  if (pairs.empty()) return std::optional<ArenaStats>();
  ArenaStats s;
  uint64_t allocations = 0, extensions = 0, shrinkages = 0;
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "InUse", s.in_use));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "TotalAllocated", s.reserved));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "MaxInUse", s.max_in_use));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "Limit", s.limit));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "NumAllocs", allocations));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "NumArenaExtensions", extensions));
  ORTGPU_RETURN_IF_ERROR(ReadNumber(pairs, "NumArenaShrinkages", shrinkages));
  s.allocations = static_cast<int64_t>(allocations);
  s.extensions = static_cast<int64_t>(extensions);
  s.shrinkages = static_cast<int64_t>(shrinkages);
  return std::optional<ArenaStats>(s);
}

Expected<ArenaStats> ReadArenaStats(const Session& session) {
  const bool cuda = session.options().provider == Provider::kCuda;
  if (!cuda && session.options().provider != Provider::kCpu) {
    return Unavailable("the " + std::string(ProviderName(session.options().provider)) +
                       " provider keeps its memory outside ONNX Runtime's arenas, so it is not measured");
  }
  int device = 0;
  if (auto it = session.options().cuda_options.find("device_id"); cuda && it != session.options().cuda_options.end()) {
    device = std::atoi(it->second.c_str());
  }
  std::map<std::string, std::string> pairs;
  try {
    Ort::MemoryInfo info = cuda ? Ort::MemoryInfo("Cuda", OrtArenaAllocator, device, OrtMemTypeDefault)
                                : Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::Allocator allocator(session.native(), info);
    for (auto& [k, v] : allocator.GetStats().GetKeyValuePairs()) pairs.emplace(k, v);
  } catch (const Ort::Exception& e) {
    return Unavailable(StatusFromOrt(e, "reading the memory arena statistics of model " + session.label()).message());
  }
  ORTGPU_ASSIGN_OR_RETURN(std::optional<ArenaStats> stats, ParseArenaStats(pairs));
  if (!stats) {
    return Unavailable("ONNX Runtime reports no arena statistics for model " + session.label() + " on " +
                       (cuda ? "GPU " + std::to_string(device) : std::string("the CPU")) +
                       " (no memory arena there)");
  }
  return *stats;
}

}  // namespace ortgpu
