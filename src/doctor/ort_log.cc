#include "doctor/ort_log.h"

#include <regex>

namespace ortgpu::doctor {

void ClassifyOrtMessage(const std::string& m, OrtLogFacts& f) {
  auto has = [&m](const char* s) { return m.find(s) != std::string::npos; };
  if (has("Failed to load library") || has("cannot open shared object file")) {
    if (f.library_load_error.empty()) f.library_load_error = m;
    static const std::regex kLib(R"(with error: ([A-Za-z0-9_.+-]+\.so[0-9.]*): cannot open shared object file)");
    std::smatch match;
    if (std::regex_search(m, match, kLib) && f.missing_library.empty()) f.missing_library = match[1];
  }
  if (has("Falling back to") || has("fallback to CPU") || has("fall back to CPU")) f.fell_back_to_cpu = true;
  static const std::regex kMemcpy(R"((\d+) Memcpy nodes are added)");
  std::smatch mm;
  if (std::regex_search(m, mm, kMemcpy)) f.memcpy_nodes_added = std::stoi(mm[1]);
  if (has("Some nodes were not assigned to the preferred execution providers")) f.nodes_not_assigned = true;
  if ((has("cuDNN") || has("cudnn")) && (has("version") || has("Version")) && f.cudnn_version_line.empty()) {
    f.cudnn_version_line = m;
  }
}

OrtLogFacts ClassifyOrtLog(const std::vector<OrtLogRecord>& records) {
  OrtLogFacts f;
  for (const auto& r : records) {
    ClassifyOrtMessage(r.message, f);
    if (r.severity >= 3) f.errors.push_back(r.message);
  }
  return f;
}

}  // namespace ortgpu::doctor
