// Finding: one verdict of `ortgpu doctor`, and Report, the ordered list of
// them. Every finding names what was seen, why it matters and the fix, so a
// reader never has to guess what to do next.
//
// Findings are plain values built by the checks (doctor/checks_*.h) and read
// by the renderers (doctor/render_*.h). Not synchronised: a Report is filled
// by one thread.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ortgpu::doctor {

enum class Verdict { kPass, kWarn, kFail, kSkip, kInfo };
std::string_view VerdictName(Verdict v);  // "pass", "warn", "fail", "skip", "info"

// The layers, in the order real deployments fail (issue #2). kHealth (the
// GPU's state and the host-device path, issue #13) is rendered after the
// driver layer it refines.
enum class Layer { kHost, kDriver, kLibraries, kCompatibility, kProvider, kEndToEnd, kModel, kHealth };
std::string_view LayerName(Layer l);  // "host", "driver", "libraries", ...

struct Finding {
  std::string id;        // stable, dotted: "driver.version", "libraries.cudnn"
  Layer layer = Layer::kHost;
  Verdict verdict = Verdict::kInfo;
  std::string title;     // one line: "cuDNN 9.19.0 loaded"
  std::string seen;      // what was observed: paths, versions, numbers
  std::string why;       // why it matters (empty for pass/info)
  std::string fix;       // the exact command or setting (empty when nothing to do)
  bool gpu = false;      // a GPU-layer finding: --require gpu turns its fail/skip into exit 1
  // Machine-readable facts for --json (all values as strings).
  std::map<std::string, std::string> facts;
};

// A finding with its identity and verdict set; the caller fills in seen,
// why, fix and facts.
Finding MakeFinding(std::string id, Layer layer, Verdict verdict, std::string title, bool gpu = false);

class Report {
 public:
  Finding& Add(Finding f);
  const std::vector<Finding>& findings() const { return findings_; }
  // The finding with this id, or nullptr.
  const Finding* Find(std::string_view id) const;
  // Worst verdict among findings of `layer`; kSkip when there are none.
  Verdict LayerVerdict(Layer layer) const;
  bool HasFailure() const;
  int Count(Verdict v) const;
  // Process exit code: 0 when nothing failed; 1 when something failed, or
  // when `require_gpu` and a GPU finding failed or was skipped.
  int ExitCode(bool require_gpu) const;

 private:
  std::vector<Finding> findings_;
};

}  // namespace ortgpu::doctor
