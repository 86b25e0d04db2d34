#include "tune/tune_output.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "tune/report.h"

namespace ortgpu::tune {
namespace fs = std::filesystem;

RunDetails StartDetails(const TuneOptions& options, const TuneInput& input, const ModelTraits& traits,
                        const GpuMemoryLimit& limit) {
  RunDetails d;
  d.model_file = input.model_file;
  d.model_folder = input.folder;
  d.base_config = input.config_path;
  d.output_dir = input.output_dir;
  d.report_path = options.report_path.empty() ? (fs::path(input.output_dir) / "tune_report.html").string()
                                              : options.report_path;
  d.provider = options.provider == Provider::kCpu ? "cpu" : "cuda";
  d.latency_budget_ms = options.latency_budget_ms;
  d.traits = traits;
  d.memory_limit_source = limit.source;
  return d;
}

Status WriteTuneOutputs(const TuneInput& input, const ConfigWriterOptions& writer, TuneReport& report) {
  RunDetails& d = report.details;
  if (report.search.winner) {
    d.config_pbtxt = TunedFolderConfig(input, *report.search.winner, writer, &d.config_changes);
    ORTGPU_RETURN_IF_ERROR(WriteTunedFolder(input, d.config_pbtxt));
    report.config_path = (fs::path(input.output_dir) / "config.pbtxt").string();
  }
  std::error_code ec;
  const fs::path parent = fs::path(d.report_path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::ofstream out(d.report_path, std::ios::binary | std::ios::trunc);
  out << RenderTuneHtml(report);
  out.close();
  if (!out) return InvalidArgument("cannot write the tune report " + d.report_path + "; check --report's folder");
  return Status::Ok();
}

}  // namespace ortgpu::tune
