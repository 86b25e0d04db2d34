// Renderers of a doctor Report: a compact human table (coloured only when
// asked, i.e. on a TTY) ending in one summary line, and one JSON document
// whose schema is docs/doctor-json.md. Pure functions; thread-safe.
#pragma once

#include <string>

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

}  // namespace ortgpu::doctor
