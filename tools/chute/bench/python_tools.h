#pragma once
// Running chute's Python helpers (chute.bench.peers, .model, .plots) from the C++ bench.
//
// The interpreter: $CHUTE_PYTHON, else python3/python next to the running `chute` executable
// (a virtual environment's bin/), else the .venv beside the sources chute was built from (a build
// tree's binary), else python3 on PATH. The helper: the source file
// python/chute/<module>.py of the tree chute was built from when it still exists (run with
// runpy, so the package's compiled extension is not needed), else `-m chute.<module>` from the
// installed package.

#include <string>
#include <vector>

namespace chute::bench {

/// The interpreter to run helpers with, as described above.
std::string find_python();

struct ToolResult {
  int exit_code = -1;
  std::vector<std::string> stdout_lines;
  std::string stderr_text;  // the last few KB
};

/// Runs helper `module` ("bench.peers": the module chute.bench.peers) with `arguments`; stdout is
/// captured line by line, stderr kept in a temporary file and returned. Throws kIoError when it
/// cannot start at all.
ToolResult run_python_tool(const std::string& module, const std::vector<std::string>& arguments);

/// The last non-empty line of a helper's stderr (usually the exception that ended it).
std::string last_line(const std::string& text);

/// Single-quotes `text` for /bin/sh.
std::string shell_quote(const std::string& text);

}  // namespace chute::bench
