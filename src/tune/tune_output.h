// What a tune run leaves behind besides its history (issue 28): the tuned
// model folder (when there is a winner) and the HTML report (always), and
// the run's details the report shows. Called by RunTune; blocking.
#pragma once

#include <string>

#include "status/status.h"
#include "tune/config_writer.h"
#include "tune/gpu_memory.h"
#include "tune/model_folder.h"
#include "tune/tune.h"

namespace ortgpu::tune {

// The details known before the search: input, output, budget, provider,
// traits, the memory limit, and where the report goes (--report, else
// OUTPUT/tune_report.html).
RunDetails StartDetails(const TuneOptions& options, const TuneInput& input, const ModelTraits& traits,
                        const GpuMemoryLimit& limit);

// With a winner: its config (TunedFolderConfig over `writer`: the user's
// config kept where tune did not search) written to the output folder
// (WriteTunedFolder), report.config_path and the details' config text and
// changes set. Then, winner or not, the HTML report written to
// report.details.report_path. Errors name the file that could not be written.
Status WriteTuneOutputs(const TuneInput& input, const ConfigWriterOptions& writer, TuneReport& report);

}  // namespace ortgpu::tune
