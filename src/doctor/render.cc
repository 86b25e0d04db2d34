#include "doctor/render.h"

#include <fmt/format.h>

namespace ortgpu::doctor {

const std::vector<Layer>& LayersInOrder() {
  static const std::vector<Layer> kLayers = {Layer::kHost,      Layer::kDriver,        Layer::kHealth,
                                             Layer::kLibraries, Layer::kCompatibility, Layer::kProvider,
                                             Layer::kEndToEnd,  Layer::kModel};
  return kLayers;
}

std::string_view LayerTitle(Layer l) {
  switch (l) {
    case Layer::kHost: return "1 Host";
    case Layer::kDriver: return "2 Driver and GPUs";
    case Layer::kLibraries: return "3 CUDA libraries";
    case Layer::kCompatibility: return "4 Compatibility";
    case Layer::kProvider: return "5 Execution provider";
    case Layer::kEndToEnd: return "6 End to end";
    case Layer::kModel: return "7 Models";
    case Layer::kHealth: return "2b GPU health and host-device path";
  }
  return "";
}

namespace {

std::string Badge(Verdict v, bool color) {
  std::string name(VerdictName(v));
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!color) return name;
  const char* code = "";
  switch (v) {
    case Verdict::kPass: code = "32"; break;
    case Verdict::kWarn: code = "33"; break;
    case Verdict::kFail: code = "1;31"; break;
    case Verdict::kSkip: code = "2"; break;
    case Verdict::kInfo: code = "36"; break;
  }
  return fmt::format("\033[{}m{}\033[0m", code, name);
}

// Wraps `text` to `width` columns, each line after the first indented.
std::string Wrap(const std::string& text, size_t indent, size_t width) {
  if (width <= indent + 20) return text;
  const size_t room = width - indent;
  std::string out, line;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    if (!line.empty() && line.size() + 1 + word.size() > room) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    pos = end + 1;
  }
  return out + line;
}

}  // namespace

std::string SummaryLine(const Report& report, bool require_gpu) {
  const int exit = report.ExitCode(require_gpu);
  std::string verdict;
  const Finding* speed = report.Find("e2e.speedup");
  const Finding* cuda = report.Find("e2e.cuda");
  if (exit != 0) {
    const Finding* first = nullptr;
    for (const auto& f : report.findings()) {
      if (f.verdict == Verdict::kFail || (require_gpu && f.gpu && f.verdict == Verdict::kSkip)) {
        first = &f;
        break;
      }
    }
    verdict = first ? "NOT READY: " + first->title + " [" + first->id + "]" : "NOT READY";
  } else if (cuda && cuda->verdict == Verdict::kPass) {
    verdict = "GPU READY: ONNX Runtime runs on CUDA";
    if (speed) verdict += " (" + speed->title + ")";
  } else {
    verdict = "CPU only: no usable GPU here; the CPU path works";
  }
  return fmt::format("{} pass, {} warn, {} fail, {} skip - {}", report.Count(Verdict::kPass),
                     report.Count(Verdict::kWarn), report.Count(Verdict::kFail), report.Count(Verdict::kSkip),
                     verdict);
}

std::string RenderText(const Report& report, const RenderOptions& o) {
  std::string out;
  size_t id_width = 8;
  for (const auto& f : report.findings()) id_width = std::max(id_width, f.id.size());
  const size_t indent = 8;
  const size_t width = static_cast<size_t>(o.width);
  for (Layer layer : LayersInOrder()) {
    bool header = false;
    for (const auto& f : report.findings()) {
      if (f.layer != layer) continue;
      if (!header) {
        out += fmt::format("{}{}{}\n", o.color ? "\033[1m" : "", LayerTitle(layer), o.color ? "\033[0m" : "");
        header = true;
      }
      const std::string badge = Badge(f.verdict, o.color);
      const size_t pad = 4 - std::min<size_t>(4, VerdictName(f.verdict).size());
      out += fmt::format("  {}{}  {:<{}}  {}\n", badge, std::string(pad, ' '), f.id, id_width, f.title);
      if (!f.seen.empty()) out += std::string(indent, ' ') + Wrap("seen: " + f.seen, indent + 6, width) + "\n";
      const bool problem = f.verdict == Verdict::kFail || f.verdict == Verdict::kWarn || f.verdict == Verdict::kSkip;
      if (problem && !f.why.empty()) out += std::string(indent, ' ') + Wrap("why:  " + f.why, indent + 6, width) + "\n";
      if (problem && !f.fix.empty()) out += std::string(indent, ' ') + Wrap("fix:  " + f.fix, indent + 6, width) + "\n";
    }
  }
  out += SummaryLine(report, o.require_gpu) + "\n";
  return out;
}

nlohmann::json RenderJson(const Report& report, bool require_gpu, const nlohmann::json& header) {
  nlohmann::json doc = header.is_object() ? header : nlohmann::json::object();
  doc["schema"] = "ortgpu.doctor/1";
  doc["require_gpu"] = require_gpu;
  doc["exit_code"] = report.ExitCode(require_gpu);
  doc["summary"] = {{"pass", report.Count(Verdict::kPass)},
                    {"warn", report.Count(Verdict::kWarn)},
                    {"fail", report.Count(Verdict::kFail)},
                    {"skip", report.Count(Verdict::kSkip)},
                    {"info", report.Count(Verdict::kInfo)},
                    {"line", SummaryLine(report, require_gpu)}};
  nlohmann::json layers = nlohmann::json::object();
  for (Layer l : LayersInOrder()) layers[std::string(LayerName(l))] = std::string(VerdictName(report.LayerVerdict(l)));
  doc["layers"] = layers;
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings()) {
    findings.push_back({{"id", f.id},
                        {"layer", std::string(LayerName(f.layer))},
                        {"status", std::string(VerdictName(f.verdict))},
                        {"title", f.title},
                        {"seen", f.seen},
                        {"why", f.why},
                        {"fix", f.fix},
                        {"gpu", f.gpu},
                        {"facts", f.facts}});
  }
  doc["findings"] = findings;
  return doc;
}

}  // namespace ortgpu::doctor
