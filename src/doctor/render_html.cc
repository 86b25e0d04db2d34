// doctor's HTML page, built with the shared page renderer
// (report/html_report.h: Chart.js inlined, escaping, the draw check). This
// file only chooses what the page shows.
#include <set>

#include <fmt/format.h>

#include "doctor/render.h"
#include "report/html_report.h"

namespace ortgpu::doctor {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

double FactNumber(const Finding& f, const std::string& key) {
  auto it = f.facts.find(key);
  if (it == f.facts.end()) return 0;
  try {
    return std::stod(it->second);
  } catch (...) {
    return 0;
  }
}

// "e2e.placement" -> "built-in check model"; "model.2.placement" -> "model 2".
std::string RunLabel(const Finding& f) {
  if (f.id == "e2e.placement") return "built-in check model";
  return "model " + f.id.substr(6, f.id.size() - 6 - std::string(".placement").size());
}

// Nodes per execution provider, one bar group per profiled run.
void AddPlacementChart(const Report& report, report::HtmlPage& page) {
  // Runs in report order (the check model, then model 1, 2, ...), each EP's
  // node count per run; an EP that ran no node of a run gets 0 there, so
  // every series lists the runs in the same order and the bars line up.
  std::vector<const Finding*> runs;
  std::set<std::string> eps;
  for (const auto& f : report.findings()) {
    const bool placement = f.id == "e2e.placement" ||
                           (f.id.rfind("model.", 0) == 0 && f.id.size() > 10 &&
                            f.id.compare(f.id.size() - 10, 10, ".placement") == 0);
    if (!placement) continue;
    runs.push_back(&f);
    for (const auto& [key, value] : f.facts) {
      if (key.rfind("nodes.", 0) == 0) eps.insert(key.substr(6));
    }
  }
  if (eps.empty()) return;
  page.AddHeading("Node placement per execution provider");
  report::Chart c;
  c.id = "placement";
  c.kind = report::ChartKind::kBar;
  c.title = "Nodes per execution provider (from one profiled run)";
  c.y_label = "nodes";
  for (const std::string& ep : eps) {
    std::vector<report::Point> points;
    for (size_t i = 0; i < runs.size(); ++i) {
      const Finding& f = *runs[i];
      const bool ran = f.facts.count("nodes." + ep) > 0;
      points.push_back({static_cast<double>(i + 1), ran ? FactNumber(f, "nodes." + ep) : 0.0, RunLabel(f)});
    }
    c.series.push_back({ep, std::move(points)});
  }
  page.AddChart(std::move(c));
}

// The copy test's four rates beside what the link gives.
void AddBandwidthChart(const Report& report, report::HtmlPage& page) {
  const Finding* copy = report.Find("health.copy");
  if (copy == nullptr || copy->facts.count("pinned_h2d_gbps") == 0) return;
  page.AddHeading("Host-device bandwidth");
  report::Chart c;
  c.id = "bandwidth";
  c.kind = report::ChartKind::kBar;
  c.title = "Copy test (" + copy->title + ")";
  c.y_label = "GB/s";
  std::vector<report::Point> points = {{0, FactNumber(*copy, "pinned_h2d_gbps"), "pinned host to device"},
                                       {1, FactNumber(*copy, "pinned_d2h_gbps"), "pinned device to host"},
                                       {2, FactNumber(*copy, "pageable_h2d_gbps"), "pageable host to device"},
                                       {3, FactNumber(*copy, "pageable_d2h_gbps"), "pageable device to host"}};
  if (copy->facts.count("link_gbps")) {
    points.push_back({4, FactNumber(*copy, "link_gbps"), "PCIe link (per direction)"});
    c.highlight = points.back();
    c.highlight_label = "what the link gives";
  }
  c.series.push_back({"GB/s", std::move(points)});
  page.AddChart(std::move(c));
}

}  // namespace

std::string RenderHtml(const Report& report, bool require_gpu, const nlohmann::json& header) {
  report::HtmlPage page("ortgpu doctor");
  page.AddParagraph(SummaryLine(report, require_gpu));
  std::vector<std::vector<std::string>> facts;
  if (header.is_object()) {
    for (const auto& [key, value] : header.items()) facts.push_back({key, value.is_string() ? value.get<std::string>() : value.dump()});
  }
  if (!facts.empty()) page.AddTable({"run", "value"}, std::move(facts));

  page.AddHeading("Layers");
  std::vector<std::vector<std::string>> layers;
  for (Layer l : LayersInOrder()) {
    int n = 0;
    for (const auto& f : report.findings()) n += f.layer == l;
    if (n == 0) continue;
    layers.push_back({std::string(LayerTitle(l)), Upper(VerdictName(report.LayerVerdict(l))), std::to_string(n)});
  }
  page.AddTable({"layer", "worst status", "findings"}, std::move(layers));

  AddPlacementChart(report, page);
  AddBandwidthChart(report, page);

  for (Layer l : LayersInOrder()) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& f : report.findings()) {
      if (f.layer != l) continue;
      rows.push_back({Upper(VerdictName(f.verdict)), f.id, f.title, f.seen, f.why, f.fix});
    }
    if (rows.empty()) continue;
    page.AddHeading(std::string(LayerTitle(l)));
    page.AddTable({"status", "id", "finding", "seen", "why", "fix"}, std::move(rows));
  }
  return page.Render();
}

}  // namespace ortgpu::doctor
