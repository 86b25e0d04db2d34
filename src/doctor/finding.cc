#include "doctor/finding.h"

namespace ortgpu::doctor {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "pass";
    case Verdict::kWarn: return "warn";
    case Verdict::kFail: return "fail";
    case Verdict::kSkip: return "skip";
    case Verdict::kInfo: return "info";
  }
  return "info";
}

std::string_view LayerName(Layer l) {
  switch (l) {
    case Layer::kHost: return "host";
    case Layer::kDriver: return "driver";
    case Layer::kLibraries: return "libraries";
    case Layer::kCompatibility: return "compatibility";
    case Layer::kProvider: return "provider";
    case Layer::kEndToEnd: return "end_to_end";
    case Layer::kModel: return "model";
    case Layer::kHealth: return "health";
  }
  return "host";
}

Finding MakeFinding(std::string id, Layer layer, Verdict verdict, std::string title, bool gpu) {
  Finding f;
  f.id = std::move(id);
  f.layer = layer;
  f.verdict = verdict;
  f.title = std::move(title);
  f.gpu = gpu;
  return f;
}

Finding& Report::Add(Finding f) {
  findings_.push_back(std::move(f));
  return findings_.back();
}

const Finding* Report::Find(std::string_view id) const {
  for (const auto& f : findings_) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

namespace {
int Severity(Verdict v) {
  switch (v) {
    case Verdict::kFail: return 4;
    case Verdict::kWarn: return 3;
    case Verdict::kSkip: return 2;
    case Verdict::kPass: return 1;
    case Verdict::kInfo: return 0;
  }
  return 0;
}
}  // namespace

Verdict Report::LayerVerdict(Layer layer) const {
  Verdict worst = Verdict::kInfo;
  bool any = false;
  for (const auto& f : findings_) {
    if (f.layer != layer) continue;
    any = true;
    if (Severity(f.verdict) > Severity(worst)) worst = f.verdict;
  }
  if (!any) return Verdict::kSkip;
  return worst == Verdict::kInfo ? Verdict::kPass : worst;
}

bool Report::HasFailure() const { return Count(Verdict::kFail) > 0; }

int Report::Count(Verdict v) const {
  int n = 0;
  for (const auto& f : findings_) n += f.verdict == v;
  return n;
}

int Report::ExitCode(bool require_gpu) const {
  for (const auto& f : findings_) {
    if (f.verdict == Verdict::kFail) {
      // Without --require gpu, a machine with no GPU is not a failure: GPU
      // checks report skip there, and only real faults are fail.
      return 1;
    }
    if (require_gpu && f.gpu && f.verdict == Verdict::kSkip) return 1;
  }
  return 0;
}

}  // namespace ortgpu::doctor
