// README.md's commands against the real CLI (issue 28): the README opens,
// after its two `make` commands, with a quick start of four commands
// (doctor, tune, serve, perf), and every `build/ortgpu` command line it
// shows names a subcommand and flags that `ortgpu SUBCOMMAND --help` lists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/serve_process.h"

namespace ortgpu::e2e {
namespace {

using ::testing::ElementsAre;

std::string Readme() {
  std::ifstream in(std::string(ORTGPU_SOURCE_DIR) + "/README.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The indented command lines "    build/ortgpu ..." of `text`, their comments
// cut, continuation lines ("\" at the end) joined.
std::vector<std::string> CommandLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  bool continued = false;
  while (std::getline(in, line)) {
    const bool command = line.rfind("    build/ortgpu ", 0) == 0;
    if (!command && !continued) continue;
    std::string body = line.substr(line.find_first_not_of(' '));
    if (const size_t hash = body.find("  #"); hash != std::string::npos) body.resize(hash);
    body.erase(body.find_last_not_of(' ') + 1);
    continued = !body.empty() && body.back() == '\\';
    if (continued) body.pop_back();
    if (command) {
      out.push_back(body);
    } else {
      out.back() += " " + body;
    }
  }
  return out;
}

// The subcommand and the --flags of a command line.
std::pair<std::string, std::vector<std::string>> Parse(const std::string& command) {
  std::istringstream words(command);
  std::string binary, sub, word;
  words >> binary >> sub;
  std::vector<std::string> flags;
  while (words >> word) {
    if (word.rfind("--", 0) == 0) flags.push_back(word.substr(0, word.find('=')));
  }
  return {sub.rfind("--", 0) == 0 ? "" : sub, flags};
}

TEST(ReadmeTest, OpensWithMakeThenAQuickStartInFourCommands) {
  const std::string readme = Readme();
  const size_t quick = readme.find("## Quick start");
  ASSERT_NE(quick, std::string::npos);
  // Nothing but the title and the two make commands before it.
  const std::string before = readme.substr(0, quick);
  EXPECT_NE(before.find("    make run"), std::string::npos);
  EXPECT_NE(before.find("    make test"), std::string::npos);
  EXPECT_EQ(before.find("build/ortgpu"), std::string::npos);
  const std::string section = readme.substr(quick, readme.find("\n## ", quick + 1) - quick);
  std::vector<std::string> subcommands;
  for (const std::string& c : CommandLines(section.substr(0, section.find("\n\n", section.find("    build/"))))) {
    subcommands.push_back(Parse(c).first);
  }
  EXPECT_THAT(subcommands, ElementsAre("doctor", "tune", "serve", "perf"));
}

TEST(ReadmeTest, EveryCommandsFlagsAreInItsHelp) {
  const std::vector<std::string> commands = CommandLines(Readme());
  ASSERT_GE(commands.size(), 4u);
  std::map<std::string, std::string> help;  // subcommand -> its --help
  for (const std::string& c : commands) {
    const auto [sub, flags] = Parse(c);
    if (!help.count(sub)) {
      const Outcome o = RunOrtgpu(sub.empty() ? std::vector<std::string>{"--help"} : std::vector<std::string>{sub, "--help"});
      ASSERT_EQ(o.exit_code, 0) << "ortgpu " << sub << " --help\n" << o.output;
      help[sub] = o.output;
    }
    for (const std::string& flag : flags) {
      // As CLI11 lists it: "  --flag " or ",--flag " (after a short form).
      const std::regex listed("[ ,]" + flag + "[ =\\n]");
      EXPECT_TRUE(std::regex_search(help[sub], listed)) << "README: `" << c << "`: ortgpu " << sub
                                                        << " --help does not list " << flag;
    }
  }
}

}  // namespace
}  // namespace ortgpu::e2e
