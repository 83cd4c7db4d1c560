// The `chute` command: parses the command line and reports errors. Commands live in *_command.cc.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "chute/store/http/http_client.h"
#include "chute/util/error.h"
#include "chute/version.h"
#include "commands.h"
#include "table_flags.h"

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
  using chute::http::HttpOptions;
  const char* kHttp = "HTTP (URL datasets)";
  chute::cli::add_table_option<HttpOptions>(app, "timeout", http.request_timeout_s, "", "http-")
      ->group(kHttp);
  chute::cli::add_table_option<HttpOptions>(app, "connect_timeout", http.connect_timeout_s, "",
                                            "http-")
      ->group(kHttp);
  chute::cli::add_table_option<HttpOptions>(app, "stall_timeout", http.stall_timeout_s, "", "http-")
      ->group(kHttp);
  chute::cli::add_table_option<HttpOptions>(app, "max_retries", http.max_retries, "", "http-",
                                            "--http-retries")
      ->group(kHttp);
  chute::cli::add_table_option<HttpOptions>(app, "max_in_flight", http.max_in_flight, "", "http-")
      ->group(kHttp);
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
