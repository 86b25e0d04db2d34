// Renders an HTML page in headless Chromium (Debian's /usr/bin/chromium) and
// returns the DOM after its scripts ran, for tests of the HTML reports
// (report/html_report.h) that must check a real browser drew the charts, not
// just that strings are present. Header-only; each call uses its own
// temporary folder and browser profile, so calls are independent.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>

namespace ortgpu::testing {

inline constexpr const char* kChromium = "/usr/bin/chromium";

// How many times `what` occurs in `text` (charts in a page, script tags).
inline size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// False when Chromium is not installed: tests then GTEST_SKIP.
inline bool HaveChromium() { return access(kChromium, X_OK) == 0; }

struct RenderedPage {
  bool ran = false;      // chromium exited 0
  std::string command;   // what was run, for failure messages
  std::string dom;       // the serialised DOM after the scripts ran
  // The <body> attributes the page's script sets (html_report.h): -1 when absent.
  int charts_expected = -1;
  int charts_drawn = -1;
  std::string chart_errors;  // data-chart-errors, "" when there were none
};

namespace internal {
inline int IntAttribute(const std::string& body, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(body, m, std::regex(name + "=\"(\\d+)\""))) return -1;
  return std::stoi(m[1]);
}
}  // namespace internal

// Writes `html` to a file, loads it with --dump-dom (5 s of virtual time for
// its scripts) and parses the result. With `screenshot_png`, also saves a
// 1200x2000 screenshot there.
inline RenderedPage RenderInChromium(const std::string& html, const std::string& screenshot_png = "") {
  RenderedPage out;
  char dir_template[] = "/tmp/ortgpu_chromium_XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return out;
  const std::string dir = dir_template;
  const std::string page = dir + "/page.html";
  std::ofstream(page) << html;
  const std::string flags = std::string(kChromium) +
                            " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                            " --disable-background-networking --disable-component-update --disable-sync"
                            " --disable-crash-reporter --virtual-time-budget=5000 --user-data-dir=" +
                            dir + "/profile";
  const std::string dom_file = dir + "/dom.html";
  out.command = "timeout 120 " + flags + " --dump-dom file://" + page + " > " + dom_file + " 2>" + dir + "/stderr";
  out.ran = std::system(out.command.c_str()) == 0;
  std::stringstream dom;
  dom << std::ifstream(dom_file).rdbuf();
  out.dom = dom.str();
  const size_t body_at = out.dom.find("<body");
  const std::string body = body_at == std::string::npos ? "" : out.dom.substr(body_at, out.dom.find('>', body_at) - body_at);
  out.charts_expected = internal::IntAttribute(body, "data-charts-expected");
  out.charts_drawn = internal::IntAttribute(body, "data-charts-drawn");
  std::smatch m;
  if (std::regex_search(body, m, std::regex("data-chart-errors=\"([^\"]*)\""))) out.chart_errors = m[1];
  if (!screenshot_png.empty()) {
    const std::string shot = "timeout 120 " + flags + " --hide-scrollbars --window-size=1200,2000 --screenshot=" +
                             screenshot_png + " file://" + page + " >/dev/null 2>&1";
    out.ran = out.ran && std::system(shot.c_str()) == 0;
  }
  std::system(("rm -rf " + dir).c_str());
  return out;
}

}  // namespace ortgpu::testing
