#include "chute/bench/python_tools.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "chute/util/error.h"

namespace chute::bench {
namespace fs = std::filesystem;
namespace {

bool is_executable(const fs::path& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0 && !fs::is_directory(path);
}

/// The source tree this file was compiled from (…/tools/chute/bench/python_tools.cc → …).
fs::path source_root() {
  fs::path here = __FILE__;
  if (!here.is_absolute()) return {};
  return here.parent_path().parent_path().parent_path().parent_path();
}

std::string helper_command(const std::string& python, const std::string& module) {
  // "bench.peers" is python/chute/bench/peers.py in the source tree, chute.bench.peers installed.
  std::string relative = module;
  for (char& c : relative) {
    if (c == '.') c = '/';
  }
  const fs::path file = source_root() / "python" / "chute" / (relative + ".py");
  std::error_code ignored;
  if (!source_root().empty() && fs::is_regular_file(file, ignored)) {
    // JSON string literals are valid Python string literals.
    const std::string code = "import runpy, sys; sys.argv[0] = " + nlohmann::json(module).dump() +
                             "; runpy.run_path(" + nlohmann::json(file.string()).dump() +
                             ", run_name='__main__')";
    return shell_quote(python) + " -c " + shell_quote(code);
  }
  return shell_quote(python) + " -m chute." + module;
}

std::string tail_of_file(const fs::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  return all.size() > max_bytes ? all.substr(all.size() - max_bytes) : all;
}

}  // namespace

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string find_python() {
  if (const char* env = std::getenv("CHUTE_PYTHON"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const char* name : {"python3", "python"}) {
      const fs::path candidate = self.parent_path() / name;
      if (is_executable(candidate)) return candidate.string();
    }
  }
  // A build tree's chute: the project's own virtual environment beside the sources.
  const fs::path venv = source_root() / ".venv" / "bin" / "python3";
  if (!source_root().empty() && is_executable(venv)) return venv.string();
  return "python3";
}

ToolResult run_python_tool(const std::string& module, const std::vector<std::string>& arguments) {
  std::string command = helper_command(find_python(), module);
  for (const std::string& argument : arguments) command += " " + shell_quote(argument);
  char stderr_template[] = "/tmp/chute-tool-XXXXXX";
  const int stderr_fd = mkstemp(stderr_template);
  if (stderr_fd < 0) fail_errno(errno, "create a temporary file", stderr_template);
  ::close(stderr_fd);
  command += " 2>" + shell_quote(stderr_template);

  ToolResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ::unlink(stderr_template);
    fail_errno(errno, "start the Python helper", command);
  }
  std::string line;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      result.stdout_lines.push_back(std::move(line));
      line.clear();
    }
  }
  if (!line.empty()) result.stdout_lines.push_back(std::move(line));
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.stderr_text = tail_of_file(stderr_template, 4000);
  ::unlink(stderr_template);
  return result;
}

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  const size_t newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

}  // namespace chute::bench
