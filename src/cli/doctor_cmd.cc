// `ortgpu doctor`: flags, then doctor::RunDoctor on the real machine, then a
// text table or one JSON document.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/inputs.h"
#include "bench/tensor_files.h"
#include "cli/commands.h"
#include "cli/cuda_setup.h"
#include "doctor/devices.h"
#include "doctor/doctor.h"
#include "doctor/render.h"
#include "gpu/cuda_driver.h"
#include "gpu/dynamic_loader.h"
#include "gpu/library_search.h"
#include "gpu/nvml.h"
#include "ort/runtime.h"
#include "ort/session_options.h"
#include "ort/tensor.h"
#include "serve/repository/instance_placement.h"

namespace ortgpu::cli {
namespace {

struct DoctorFlags {
  std::string require;
  bool json = false;
  std::string html;
  bool no_copy_test = false;
  std::vector<std::string> models;
  std::vector<std::string> shapes;
  std::vector<std::string> int_ranges;
  std::vector<std::string> input_files;
  std::vector<std::string> cuda_options;
  int runs = 20;
  std::string device = "0";  // a CUDA ordinal, or "all"
  std::string color = "auto";
};

// --device all: doctor once per GPU, each report, then the GPUs side by side.
int RunOnEveryDevice(const DoctorFlags& flags, doctor::DoctorOptions options, doctor::DoctorSeams& seams,
                     const serve::VisibleGpus& visible, const nlohmann::json& header) {
  std::vector<doctor::DeviceReport> reports;
  for (int gpu = 0; gpu < visible.count(); ++gpu) {
    options.observe.device_id = gpu;
    reports.push_back({gpu, visible.names[gpu], doctor::RunDoctor(options, seams)});
  }
  const doctor::DeviceSummary summary = doctor::SummarizeDevices(reports, options.require_gpu);
  if (flags.json) {
    std::printf("%s\n", doctor::RenderDevicesJson(reports, summary, options.require_gpu, header).dump(2).c_str());
    return doctor::DevicesExitCode(summary);
  }
  doctor::RenderOptions ro;
  ro.require_gpu = options.require_gpu;
  ro.color = flags.color == "always" || (flags.color == "auto" && ::isatty(STDOUT_FILENO));
  for (const auto& d : reports) {
    std::printf("== GPU %d%s ==\n", d.gpu, d.name.empty() ? "" : (" (" + d.name + ")").c_str());
    std::fputs(doctor::RenderText(d.report, ro).c_str(), stdout);
    std::fputs("\n", stdout);
  }
  std::fputs(doctor::RenderDeviceSummary(summary).c_str(), stdout);
  return doctor::DevicesExitCode(summary);
}

int RunDoctorCommand(const DoctorFlags& flags) {
  doctor::DoctorOptions options;
  options.require_gpu = flags.require == "gpu";
  options.models = flags.models;
  options.observe.timed_runs = flags.runs;
  auto device = ParseDeviceFlag(flags.device);
  if (!device.ok()) {
    std::fprintf(stderr, "ortgpu doctor: %s\n", device.status().message().c_str());
    return 2;
  }
  const bool all_devices = !device->has_value();
  if (!all_devices) {
    options.observe.device_id = **device;
  } else if (!flags.html.empty()) {
    std::fprintf(stderr, "ortgpu doctor: --device all writes a table or --json; for --html give one GPU (--device N)\n");
    return 2;
  }
  options.copy_test = !flags.no_copy_test;
  // The spellings bench takes (bench/inputs.h), so one command line works in both.
  bench::InputSpec spec;
  Status st = Status::Ok();
  for (const auto& s : flags.shapes) {
    if (st.ok()) st = bench::ParseShapeFlag(s, spec);
  }
  for (const auto& r : flags.int_ranges) {
    if (st.ok()) st = bench::ParseIntRangeFlag(r, spec);
  }
  for (const auto& f : flags.input_files) {
    if (st.ok()) st = bench::ParseInputFlag(f, spec);
  }
  for (const auto& kv : flags.cuda_options) {
    if (st.ok()) st = ParseKeyValue(kv, options.observe.cuda_options).WithContext("--cuda-option");
  }
  if (st.ok()) st = ValidateCudaOptions(options.observe.cuda_options).WithContext("--cuda-option");
  if (st.ok() && options.observe.cuda_options.count("device_id")) {
    st = InvalidArgument("--cuda-option device_id: give the GPU with --device N");
  }
  for (const auto& [name, file] : spec.files) {
    if (!st.ok()) break;
    auto tensor = bench::ReadTensorFile(file, name);
    if (!tensor.ok()) {
      st = tensor.status().WithContext("--input " + name + "=" + file);
    } else {
      options.observe.inputs[name] = std::move(tensor).value();
    }
  }
  if (!st.ok()) {
    std::fprintf(stderr, "ortgpu doctor: %s\n", st.message().c_str());
    return 2;
  }
  options.observe.shapes = spec.shapes;
  options.observe.int_ranges = spec.int_ranges;
  if (const char* tmp = std::getenv("TMPDIR")) options.observe.temp_dir = tmp;

  auto driver = gpu::NewCudaDriver();
  auto nvml = gpu::NewNvml();
  gpu::LibrarySearch search(RealFileSystem(), RealEnvironment());
  doctor::DoctorSeams seams;
  seams.fs = &RealFileSystem();
  seams.env = &RealEnvironment();
  seams.driver = driver.get();
  seams.nvml = nvml.get();
  seams.loader = &gpu::RealDynamicLoader();
  seams.search = &search;
  seams.host = doctor::ReadHostFacts();
  seams.preload = PreloadCudaLibrariesOnce();
  seams.ort_version = Runtime::Get().Version();

  const nlohmann::json header = {{"ortgpu_version", ORTGPU_VERSION},
                                 {"ort_version", seams.ort_version},
                                 {"models", flags.models}};
  // With no GPU visible (or none that answers), the one run below says why.
  auto visible = serve::ProbeVisibleGpus(*driver, RealEnvironment());
  const bool gpus_known = visible.ok() && visible->count() > 0;
  if (all_devices && gpus_known) return RunOnEveryDevice(flags, options, seams, *visible, header);
  if (!all_devices && gpus_known) {
    Status there = CheckDeviceVisible(flags.device, **device, *visible);
    if (!there.ok()) {
      std::fprintf(stderr, "ortgpu doctor: %s\n", there.message().c_str());
      return 2;
    }
  }
  doctor::Report report = doctor::RunDoctor(options, seams);
  if (!flags.html.empty()) {
    Status written = WriteOutputFile(flags.html, doctor::RenderHtml(report, options.require_gpu, header), "HTML report");
    if (!written.ok()) {
      std::fprintf(stderr, "ortgpu doctor: --html: %s\n", written.message().c_str());
      return ExitCodeFor(written.code());
    }
  }
  if (flags.json) {
    std::printf("%s\n", doctor::RenderJson(report, options.require_gpu, header).dump(2).c_str());
  } else {
    doctor::RenderOptions ro;
    ro.require_gpu = options.require_gpu;
    ro.color = flags.color == "always" || (flags.color == "auto" && ::isatty(STDOUT_FILENO));
    std::fputs(doctor::RenderText(report, ro).c_str(), stdout);
  }
  return report.ExitCode(options.require_gpu);
}

}  // namespace

void AddDoctorCommand(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Diagnose, layer by layer, whether ONNX Runtime really runs on the GPU here: host, driver and GPUs, GPU health "
      "and the host-device path, CUDA "
      "libraries, version compatibility, the CUDA execution provider, an end-to-end run, and your models. "
      "Exit 0 when nothing failed, 1 when something did, 2 on bad usage.");
  cmd->add_option("--require", flags->require,
                  "'gpu': treat every GPU failure or skip as a failure (exit 1): a pre-deploy gate or init container")
      ->check(CLI::IsMember({"gpu"}));
  cmd->add_flag("--json", flags->json, "Print one JSON document (schema: docs/doctor-json.md)");
  cmd->add_option("--html", flags->html,
                  "Also write one self-contained HTML page to FILE (layers, findings, node placement per EP and "
                  "host-device bandwidth as charts; opens offline) to attach to a ticket")
      ->type_name("FILE");
  cmd->add_flag("--no-copy-test", flags->no_copy_test,
                "Skip the host-device copy test of the GPU health layer (64 MiB x 3 per direction and memory "
                "kind, well under 0.5 s)");
  cmd->add_option("--model", flags->models, "An ONNX model to check end to end with its node placement (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--shape", flags->shapes,
                  "NAME:DIMS for input NAME (input_ids:1x128) or a symbolic dim (sequence:128), as bench; other "
                  "symbolic dims default to 1 (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--int-range", flags->int_ranges,
                  "NAME:LO:HI, integer input values in [LO,HI) (sr:16000:16001); default 0 or 1 (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--input", flags->input_files,
                  "NAME=FILE, real data for input NAME from a .npy or ONNX TensorProto .pb file (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--cuda-option", flags->cuda_options,
                  "CUDA EP option KEY=VALUE for doctor's CUDA sessions, as bench takes it (repeatable); "
                  "use_tf32=0 checks true float32 and host.tf32 reports who set TF32")
      ->allow_extra_args(false);
  cmd->add_option("--runs", flags->runs, "Timed runs per provider in the end-to-end checks")
      ->check(CLI::Range(1, 100000))
      ->default_val(20);
  cmd->add_option("--device", flags->device,
                  "The GPU to check (a CUDA ordinal after CUDA_VISIBLE_DEVICES), or all: every layer once per "
                  "visible GPU, then the GPUs side by side with the fastest and the slowest named")
      ->default_val("0");
  cmd->add_option("--color", flags->color, "Colour the table: auto (on a TTY), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->default_val("auto");
  cmd->callback([flags, &result]() { result.exit_code = RunDoctorCommand(*flags); });
}

}  // namespace ortgpu::cli
