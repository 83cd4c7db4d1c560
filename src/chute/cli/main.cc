// The `chute` command: parses the command line and reports errors. Commands live in *_command.cc.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "chute/util/error.h"
#include "chute/version.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"chute: fast training batches from chunked arrays (Zarr v2/v3)", "chute"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("chute ") + chute::kVersion);
  chute::cli::register_info(app);
  chute::cli::register_make_dataset(app);
  chute::cli::register_bench(app);
  chute::cli::register_stats(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "chute: error: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  } catch (const chute::Error& e) {
    std::cerr << "chute: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "chute: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
