// --cache / --cache-size, shared by the commands that open datasets.
#include <string>

#include "commands.h"
#include "table_flags.h"

namespace chute::cli {

void add_cache_options(CLI::App& command, CacheOptions& cache) {
  CLI::Option* folder = add_table_option<CacheOptions>(command, "cache", cache.dir);
  command
      .add_option_function<std::string>(
          "--cache-size",
          [&cache](const std::string& text) {
            size_t used = 0;
            const double number = std::stod(text, &used);
            const std::string unit = text.substr(used);
            double scale = 1;
            if (unit == "k" || unit == "K")
              scale = 1024.0;
            else if (unit == "M")
              scale = 1024.0 * 1024;
            else if (unit == "G")
              scale = 1024.0 * 1024 * 1024;
            else if (unit == "T")
              scale = 1024.0 * 1024 * 1024 * 1024;
            else if (!unit.empty())
              throw CLI::ValidationError("--cache-size", "unit " + unit);
            // 2^64: a larger value would wrap around in the conversion below.
            if (!(number * scale >= 1) || !(number * scale < 18446744073709551616.0)) {
              throw CLI::ValidationError(
                  "--cache-size", text + " is outside [1 byte, 16 EiB) (suffixes k, M, G, T)");
            }
            cache.max_bytes = static_cast<uint64_t>(number * scale);
          },
          std::string(table_field<CacheOptions>("cache_size").help) +
              " (default 16G; suffixes k, M, G, T)")
      ->needs(folder);
}

}  // namespace chute::cli
