// The `chute` command: parses the command line and reports errors. Commands live in *_command.cc.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "chute/store/http/http_client.h"
#include "chute/util/error.h"
#include "chute/version.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "chute: fast training batches from chunked arrays (Zarr v2/v3, HDF5/NetCDF-4, NumPy .npy)",
      "chute"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("chute ") + chute::kVersion);
  chute::cli::register_info(app);
  chute::cli::register_make_dataset(app);
  chute::cli::register_bench(app);
  chute::cli::register_stats(app);
  // HTTP client settings for URL datasets (https://...), before or after the command name.
  chute::http::HttpOptions http = chute::http::options();
  app.fallthrough();
  app.add_option("--http-timeout", http.request_timeout_s, "seconds per HTTP request attempt")
      ->group("HTTP (URL datasets)");
  app.add_option("--http-connect-timeout", http.connect_timeout_s, "seconds to connect")
      ->group("HTTP (URL datasets)");
  app.add_option("--http-stall-timeout", http.stall_timeout_s,
                 "seconds a transfer may stall before it is retried")
      ->group("HTTP (URL datasets)");
  app.add_option("--http-retries", http.max_retries,
                 "retries of a failed request (timeouts, "
                 "resets, 429, 5xx)")
      ->group("HTTP (URL datasets)");
  app.add_option("--http-max-in-flight", http.max_in_flight,
                 "HTTP requests running at once (whole process)")
      ->group("HTTP (URL datasets)");
  // Applied once the command line is parsed, before the command runs.
  app.parse_complete_callback([&http] { chute::http::set_options(http); });
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
