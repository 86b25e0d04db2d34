// Chart.js, the charting library HTML reports inline (html_report.h): the
// UMD build and its MIT licence text, compiled into the binary at build time
// (cmake/ChartJs.cmake generates the definitions from the pinned npm package
// that scripts/fetch_chartjs.sh fetched). Static data; thread-safe.
#pragma once

#include <string_view>

namespace ortgpu::report {

std::string_view ChartJsScript();   // dist/chart.umd.min.js; defines window.Chart
std::string_view ChartJsLicense();  // LICENSE.md (MIT)

}  // namespace ortgpu::report
