// Renderers of a doctor Report: a compact human table (coloured only when
// asked, i.e. on a TTY) ending in one summary line, one JSON document whose
// schema is docs/doctor-json.md, and one self-contained HTML page to attach
// to a ticket (report/html_report.h: layers, findings, node placement per
// EP and host-device bandwidth as charts). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/finding.h"

namespace ortgpu::doctor {

struct RenderOptions {
  bool color = false;     // ANSI colours (the CLI sets it when stdout is a TTY)
  bool require_gpu = false;
  int width = 100;        // wrap long lines at this width
};

std::string RenderText(const Report& report, const RenderOptions& options);
// The single summary line the text ends with.
std::string SummaryLine(const Report& report, bool require_gpu);

// `header` carries run-level facts (versions, options) copied into the top
// level of the document.
nlohmann::json RenderJson(const Report& report, bool require_gpu, const nlohmann::json& header);

// The page: the summary line, the run facts of `header` (versions, models),
// the verdict of each layer, every finding with what was seen, why and the
// fix, a chart of node placement per execution provider for each run that
// profiled it (facts nodes.<EP> of e2e.placement and model.<n>.placement),
// and a chart of the copy test's bandwidth against the PCIe link
// (health.copy). No external resource: it opens offline.
std::string RenderHtml(const Report& report, bool require_gpu, const nlohmann::json& header);

// The layers in the order the renderers show them, and their headings
// ("1 Host", "2b GPU health and host-device path", ...).
const std::vector<Layer>& LayersInOrder();
std::string_view LayerTitle(Layer layer);

}  // namespace ortgpu::doctor
